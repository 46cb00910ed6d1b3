/* adminops_fuzz.c — libFuzzer target over adminops_parse, the root applet's argv → typed call (the input is argv,
 * NUL-separated). Invariants: a refusal carries a message; an accepted call names an operation of the table, has
 * exactly its positionals, and adminops_argv of it (positionals not starting with '-') parses back to the same call
 * (the daemon's side of the boundary and admin's agree on every call admin accepts). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "adminops.h"
#include "common.h"
#include "banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int same(const char *a, const char *b)
{
	return (!a && !b) || (a && b && !strcmp(a, b));
}

static void check_same_call(const struct admin_call *a, const struct admin_call *b)
{
	if (a->op != b->op || a->repo_mode != b->repo_mode || a->dry_run != b->dry_run ||
	    !same(a->root_config, b->root_config) || !same(a->others, b->others) || !same(a->link_name, b->link_name) ||
	    !same(a->archive, b->archive) || !same(a->pid, b->pid))
		abort();
	for (int i = 0; i < ADMIN_MAX_POS; i++)
		if (!same(a->pos[i], b->pos[i]))
			abort();
}

static void round_trip(const struct admin_call *c)
{
	if ((int)c->op < 0 || c->op >= ADMIN_NOPS)
		abort();
	for (int i = 0; i < ADMIN_MAX_POS; i++)
		if ((i < adminops[c->op].npos) != (c->pos[i] != NULL))
			abort();
	struct strvec argv = STRVEC_INIT;
	strvec_push(&argv, "admin"); /* argv[0], which adminops_argv leaves out */
	adminops_argv(c, &argv);
	struct admin_call again;
	struct err e = ERR_INIT;
	if (adminops_parse((int)argv.nr, argv.v, &again, &e) < 0)
		abort();
	check_same_call(c, &again);
	strvec_clear(&argv);
}

/* A positional such as "-x" reads back only after "--", which adminops_argv never writes: the task runner appends
 * --json to its argv. The daemon's positionals are ids, absolute paths and user names (adminops.h). */
static int dashed_positional(const struct admin_call *c)
{
	for (int i = 0; i < ADMIN_MAX_POS; i++)
		if (c->pos[i] && c->pos[i][0] == '-')
			return 1;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 4096)
		return 0;
	struct strvec argv = STRVEC_INIT;
	strvec_push(&argv, "admin");
	for (size_t off = 0; off < size;) {
		const char *nul = memchr(data + off, 0, size - off);
		size_t n = nul ? (size_t)(nul - (const char *)data - off) : size - off;
		strvec_push_nodup(&argv, xstrndup((const char *)data + off, n));
		off += n + 1;
	}
	struct admin_call c;
	struct err e = ERR_INIT;
	if (adminops_parse((int)argv.nr, argv.v, &c, &e) < 0) {
		if (!e.message)
			abort();
	} else if (!dashed_positional(&c)) {
		round_trip(&c);
	}
	err_clear(&e);
	strvec_clear(&argv);
	return 0;
}
