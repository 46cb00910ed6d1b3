/* knownhosts_fuzz.c — libFuzzer target over known_hosts_keys, the reader of an OpenSSH known_hosts text (the
 * setting execution.git.known_hosts, which a project may set). The input is "HOST\nPORT\nTEXT"; the host and
 * port are also tried as the ones the text names. Invariants: the answer is an array of "TYPE BASE64" strings,
 * each a key some line of the text holds, and never a key an "@revoked * TYPE KEY" line lists. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "knownhosts.h"
#include "common.h"
#include "banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* "TYPE BASE64" as it appears in text: the key is one of the text's own. */
static void check_key(const char *text, const char *key)
{
	const char *sp = strchr(key, ' ');
	if (!sp || sp == key || !sp[1] || strchr(sp + 1, ' ') || !strstr(text, sp + 1))
		abort();
	for (const char *at = text; at; at = strchr(at, '\n'), at = at ? at + 1 : NULL) {
		if (strncmp(at, "@revoked * ", 11))
			continue; /* a line revoking for every host */
		size_t n = strlen(key), len = strcspn(at, "\r\n");
		if (len >= 11 + n && !strncmp(at + 11, key, n) &&
		    (len == 11 + n || at[11 + n] == ' ' || at[11 + n] == '\t'))
			abort(); /* a revoked key handed out as trusted */
	}
}

static void check(const char *text, const char *host, int port)
{
	json_t *keys = known_hosts_keys(text, host, port);
	if (!json_is_array(keys))
		abort();
	size_t i;
	json_t *k;
	json_array_foreach(keys, i, k)
	{
		if (!json_is_string(k))
			abort();
		check_key(text, json_string_value(k));
	}
	json_decref(keys);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *all = xstrndup((const char *)data, size);
	char *port = strchr(all, '\n'), *text = port ? strchr(port + 1, '\n') : NULL;
	if (!text) {
		check(all, "github.com", 22);
		free(all);
		return 0;
	}
	*port++ = 0;
	*text++ = 0;
	check(text, all, atoi(port) > 0 && atoi(port) < 65536 ? atoi(port) : 22);
	free(all);
	return 0;
}
