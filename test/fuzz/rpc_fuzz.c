/* rpc_fuzz.c — libFuzzer target over lib/rpc's message handling (rpc_process): what any peer of the daemon sends
 * first. A table with one method stands in for the daemon's; every input gets a reply that is valid JSON, or
 * none (notifications only); never a crash. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "rpc.h"
#include "banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int echo(struct rpc_ctx *rc, json_t *params, json_t **result, struct err *e)
{
	(void)rc, (void)e;
	*result = json_deep_copy(params ? params : json_null());
	return 0;
}

static int refuse(struct rpc_ctx *rc, json_t *params, json_t **result, struct err *e)
{
	(void)rc, (void)params, (void)result;
	return err_set(e, E_PERMISSION_DENIED, "refused");
}

static const struct rpc_method methods[] = {
	{ "echo", echo },
	{ "refuse", refuse },
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *reply = rpc_process(methods, 2, NULL, NULL, (const char *)data, size);
	if (reply) {
		json_error_t error;
		json_t *j = json_loads(reply, 0, &error);
		if (!j)
			abort();
		json_decref(j);
		free(reply);
	}
	return 0;
}
