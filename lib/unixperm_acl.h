/* unixperm_acl.h — POSIX ACLs in their xattr form (system.posix_acl_access/default, version 2, little-endian):
 * the entries a mode and a group give, encoding, decoding and a human description. Pure functions. */
#ifndef AGOR_UNIXPERM_ACL_H
#define AGOR_UNIXPERM_ACL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "strbuf.h"

/* ---- POSIX ACLs (xattr format) ------------------------------------------------------------ */
enum {
	UNIXPERM_ACL_USER_OBJ = 0x01,
	UNIXPERM_ACL_USER = 0x02,
	UNIXPERM_ACL_GROUP_OBJ = 0x04,
	UNIXPERM_ACL_GROUP = 0x08,
	UNIXPERM_ACL_MASK = 0x10,
	UNIXPERM_ACL_OTHER = 0x20,
};
#define UNIXPERM_ACL_UNDEFINED_ID 0xffffffffu
#define UNIXPERM_ACL_MAX_ENTRIES  32

struct unixperm_acl_entry {
	uint16_t tag;
	uint16_t perm; /* rwx = 4|2|1 */
	uint32_t id;   /* uid/gid for USER/GROUP, else UNIXPERM_ACL_UNDEFINED_ID */
};

/* The five entries u::,g::,g:gid:,m::,o:: for mode (group perms = named group = mask). */
size_t unixperm_acl_for_mode(mode_t mode, gid_t gid, struct unixperm_acl_entry out[5]);
/* Appends the xattr value (header + entries, little-endian). Entries must be sorted. */
void unixperm_acl_encode(const struct unixperm_acl_entry *ent, size_t n, struct strbuf *out);
/* Parses an xattr value; -1 on a malformed one. */
int unixperm_acl_decode(const void *buf, size_t len, struct unixperm_acl_entry *out, size_t max, size_t *n);
/* "u::rwx,g::rwx,g:NAME:rwx,m::rwx,o::r-x" (group_name used for the named group entries). */
void unixperm_acl_describe(const struct unixperm_acl_entry *ent, size_t n, const char *group_name, struct strbuf *out);

#endif
