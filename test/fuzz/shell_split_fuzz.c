/* shell_split_fuzz.c — libFuzzer target over the approvals shell analyser's splitter (approvals_policy.h
 * appr_shell_split): shell text from an untrusted agent, cut into simple commands or refused. Invariants: it
 * answers, refusals carry a message, and every accepted segment is a non-empty argv of NUL-free words. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "approvals_policy.h"
#include "common.h"
#include "banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = xstrndup((const char *)data, size);
	struct strvec *segments = NULL;
	size_t nr = 0;
	struct err e = ERR_INIT;
	if (appr_shell_split(text, &segments, &nr, &e) == 0) {
		for (size_t i = 0; i < nr; i++)
			if (!segments[i].nr || !segments[i].v[0])
				abort();
		appr_segments_free(segments, nr);
	} else if (!e.message) {
		abort();
	}
	err_clear(&e);
	free(text);
	return 0;
}
