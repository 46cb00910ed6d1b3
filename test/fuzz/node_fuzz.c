/* node_fuzz.c — libFuzzer target over the headless node's reading of a system.run request (node_run_args): the
 * params a gateway sends, turned into the `agor approvals exec` command line the node runs under its own policy.
 * Invariants: a refusal names a field; an accepted request gives SELF approvals exec --ask-stdin --agent A, then
 * only the flags --security/--ask/--timeout with valid values (--security deny when the request names none),
 * then "--" and exactly the request's argv: no word of the request can become an option of approvals exec. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "approvals_policy.h"
#include "json.h"
#include "node_runner.h"
#include "banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The flags before "--": each known, each with a valid value; returns the index of "--". */
static size_t check_flags(const struct strvec *a, json_t *params)
{
	if (a->nr < 7 || strcmp(a->v[0], "/agor") || strcmp(a->v[1], "approvals") || strcmp(a->v[2], "exec") ||
	    strcmp(a->v[3], "--ask-stdin") || strcmp(a->v[4], "--agent"))
		abort();
	int security = 0;
	size_t i = 6;
	for (; i + 1 < a->nr && strcmp(a->v[i], "--"); i += 2) {
		const char *flag = a->v[i], *value = a->v[i + 1];
		if (!strcmp(flag, "--security")) {
			if (appr_security_parse(value) < 0)
				abort();
			security = 1;
		} else if (!strcmp(flag, "--ask")) {
			if (appr_ask_parse(value) < 0)
				abort();
		} else if (!strcmp(flag, "--timeout")) {
			if (strspn(value, "0123456789") != strlen(value) || value[0] == '0')
				abort();
		} else {
			abort(); /* a flag the node never writes */
		}
	}
	if (i >= a->nr || strcmp(a->v[i], "--") || !security)
		abort();
	if (!json_object_get(params, "security") && strcmp(a->v[7], "deny"))
		abort(); /* no security named: deny */
	return i;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct err e = ERR_INIT;
	json_t *params = json_parse((const char *)data, size, &e);
	err_clear(&e);
	if (!params)
		return 0;
	struct strvec args = STRVEC_INIT;
	if (node_run_args("/agor", params, &args, &e) < 0) {
		if (!e.message)
			abort();
	} else {
		size_t dashes = check_flags(&args, params);
		json_t *argv = json_object_get(params, "argv");
		if (args.nr - dashes - 1 != json_array_size(argv))
			abort();
		for (size_t i = 0; i < json_array_size(argv); i++)
			if (strcmp(args.v[dashes + 1 + i], json_string_value(json_array_get(argv, i))))
				abort();
	}
	err_clear(&e);
	strvec_clear(&args);
	json_decref(params);
	return 0;
}
