/* config_fuzz.c — libFuzzer target over the config file reader (config_load: libyaml and the walk over agor's
 * keys), fed a file of the input's bytes as --config names it, with an environment of its own. Invariants: a
 * refusal carries a message; every value an accepted file set reads back as itself when given as a flag (the
 * canonical text config_entry_at shows parses to the same value: `agor config set` and the policy rely on it). */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* tmpfs when there is one: ext4 flushes a file truncated and rewritten at close, a wait per input on /tmp. */
static const char *scratch_dir(void)
{
	struct stat st;
	return stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) && access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
}

static char path[64];

static void remove_file(void)
{
	unlink(path);
}

static int write_file(const uint8_t *data, size_t size)
{
	if (!path[0]) {
		snprintf(path, sizeof(path), "%s/agor-config-fuzz-%d.yaml", scratch_dir(), (int)getpid());
		atexit(remove_file);
	}
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	int ok = write(fd, data, size) == (ssize_t)size;
	close(fd);
	return ok ? 0 : -1;
}

static void check_values_read_back(const struct config *cfg)
{
	for (size_t i = 0; i < config_count(); i++) {
		struct config_entry en;
		if (config_entry_at(cfg, i, &en) < 0 || en.source != CONFIG_SOURCE_FILE || !en.value ||
		    (en.type == CONFIG_NULLABLE_STRING && !*en.value))
			continue; /* a flag's "" is null for a nullable key: the file's "" has no flag spelling */
		struct config *again = config_new();
		struct err e = ERR_INIT;
		struct config_entry back;
		if (config_set_flag(again, en.key, en.value, &e) < 0 || config_entry_get(again, en.key, &back) < 0 ||
		    !back.value || strcmp(back.value, en.value))
			abort();
		config_free(again);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 65536 || write_file(data, size) < 0)
		return 0;
	char *const env[] = { (char *)"HOME=/home/fuzz", (char *)"USER=fuzz", NULL };
	struct config_overrides ov = { .config_path = path, .env = env };
	struct config *cfg = config_new();
	struct err e = ERR_INIT;
	if (config_load(cfg, &ov, &e) == 0)
		check_values_read_back(cfg);
	else if (!e.message)
		abort();
	err_clear(&e);
	config_free(cfg);
	return 0;
}
