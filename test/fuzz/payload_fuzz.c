/* payload_fuzz.c — libFuzzer target over the executor's payload parser (payload.h): the typed JSON an executor
 * takes from stdin. Any input must parse or be refused with a code and a message; never crash, leak or loop.
 * Invariant: an accepted payload names one of the known commands and its params are an object. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "payload.h"
#include "banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct payload p;
	struct err e = ERR_INIT;
	if (payload_parse((const char *)data, size, &p, &e) == 0) {
		if (!p.command_name || !json_is_object(p.params))
			abort();
		payload_release(&p);
	} else if (!e.code || !e.message) {
		abort();
	}
	err_clear(&e);
	return 0;
}
