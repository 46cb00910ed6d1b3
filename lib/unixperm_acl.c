/* unixperm_acl.c — POSIX ACL xattr values (unixperm_acl.h). Never accepts a malformed value as an ACL. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "unixperm_acl.h"
#include "banned.h"

#define ACL_XATTR_VERSION 2u

/* ---- POSIX ACLs ---------------------------------------------------------------------------- */

size_t unixperm_acl_for_mode(mode_t mode, gid_t gid, struct unixperm_acl_entry out[5])
{
	uint16_t u = (mode >> 6) & 7, g = (mode >> 3) & 7, o = mode & 7;
	out[0] = (struct unixperm_acl_entry){ UNIXPERM_ACL_USER_OBJ, u, UNIXPERM_ACL_UNDEFINED_ID };
	out[1] = (struct unixperm_acl_entry){ UNIXPERM_ACL_GROUP_OBJ, g, UNIXPERM_ACL_UNDEFINED_ID };
	out[2] = (struct unixperm_acl_entry){ UNIXPERM_ACL_GROUP, g, (uint32_t)gid };
	out[3] = (struct unixperm_acl_entry){ UNIXPERM_ACL_MASK, g, UNIXPERM_ACL_UNDEFINED_ID };
	out[4] = (struct unixperm_acl_entry){ UNIXPERM_ACL_OTHER, o, UNIXPERM_ACL_UNDEFINED_ID };
	return 5;
}

static void add_le16(struct strbuf *sb, uint16_t v)
{
	unsigned char b[2] = { (unsigned char)(v & 0xff), (unsigned char)(v >> 8) };
	strbuf_add(sb, b, 2);
}

static void add_le32(struct strbuf *sb, uint32_t v)
{
	unsigned char b[4] = { (unsigned char)(v & 0xff), (unsigned char)((v >> 8) & 0xff),
			       (unsigned char)((v >> 16) & 0xff), (unsigned char)(v >> 24) };
	strbuf_add(sb, b, 4);
}

static uint32_t get_le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

void unixperm_acl_encode(const struct unixperm_acl_entry *ent, size_t n, struct strbuf *out)
{
	add_le32(out, ACL_XATTR_VERSION);
	for (size_t i = 0; i < n; i++) {
		add_le16(out, ent[i].tag);
		add_le16(out, ent[i].perm);
		add_le32(out, ent[i].id);
	}
}

int unixperm_acl_decode(const void *buf, size_t len, struct unixperm_acl_entry *out, size_t max, size_t *n)
{
	const unsigned char *p = buf;
	if (len < 4 || (len - 4) % 8 || get_le32(p) != ACL_XATTR_VERSION || (len - 4) / 8 > max)
		return -1;
	*n = (len - 4) / 8;
	for (size_t i = 0; i < *n; i++) {
		const unsigned char *q = p + 4 + 8 * i;
		out[i].tag = (uint16_t)(q[0] | q[1] << 8);
		out[i].perm = (uint16_t)(q[2] | q[3] << 8);
		out[i].id = get_le32(q + 4);
	}
	return 0;
}

static void add_perm(struct strbuf *sb, unsigned perm)
{
	strbuf_addch(sb, (perm & 4) ? 'r' : '-');
	strbuf_addch(sb, (perm & 2) ? 'w' : '-');
	strbuf_addch(sb, (perm & 1) ? 'x' : '-');
}

void unixperm_acl_describe(const struct unixperm_acl_entry *ent, size_t n, const char *group_name, struct strbuf *out)
{
	for (size_t i = 0; i < n; i++) {
		if (i)
			strbuf_addch(out, ',');
		switch (ent[i].tag) {
		case UNIXPERM_ACL_USER_OBJ:
			strbuf_addstr(out, "u::");
			break;
		case UNIXPERM_ACL_USER:
			strbuf_addf(out, "u:%u:", (unsigned)ent[i].id);
			break;
		case UNIXPERM_ACL_GROUP_OBJ:
			strbuf_addstr(out, "g::");
			break;
		case UNIXPERM_ACL_GROUP:
			if (group_name)
				strbuf_addf(out, "g:%s:", group_name);
			else
				strbuf_addf(out, "g:%u:", (unsigned)ent[i].id);
			break;
		case UNIXPERM_ACL_MASK:
			strbuf_addstr(out, "m::");
			break;
		case UNIXPERM_ACL_OTHER:
			strbuf_addstr(out, "o::");
			break;
		default:
			strbuf_addf(out, "?%u:", (unsigned)ent[i].tag);
			break;
		}
		add_perm(out, ent[i].perm);
	}
}
