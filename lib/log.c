/* log.c — the logger of log.h: one write(2) per line so lines from several processes never interleave.
 * Never writes to stdout. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "log.h"
#include "strbuf.h"
#include "banned.h"

static enum log_level current_level = LOG_INFO;
static char process_name[64] = "agor";
static int log_fd = 2;
static char *log_path;

static const char *const level_names[] = { "debug", "info", "warn", "error", "off" };

int log_level_parse(const char *s)
{
	for (size_t i = 0; i < ARRAY_SIZE(level_names); i++)
		if (!strcasecmp(s, level_names[i]))
			return (int)i;
	if (!strcasecmp(s, "warning"))
		return LOG_WARN;
	return -1;
}

void log_init(const char *applet)
{
	snprintf(process_name, sizeof(process_name), "agor %s", applet ? applet : "");
	const char *env = getenv("AGOR_LOG_LEVEL");
	if (env && *env) {
		int level = log_level_parse(env);
		if (level < 0)
			log_warn("AGOR_LOG_LEVEL=%s is not one of debug|info|warn|error|off; using info", env);
		else
			current_level = (enum log_level)level;
	}
}

void log_set_level(enum log_level level)
{
	current_level = level;
}

int log_open_file(const char *path)
{
	int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return -1;
	if (log_fd != 2)
		close(log_fd);
	log_fd = fd;
	if (log_path != path) {
		free(log_path);
		log_path = xstrdup(path);
	}
	return 0;
}

int log_reopen(void)
{
	return log_path ? log_open_file(log_path) : 0;
}

static void add_timestamp(struct strbuf *sb)
{
	struct timespec ts;
	struct tm tm;
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strbuf_addf(sb, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
		    tm.tm_hour, tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000);
}

void log_msg(enum log_level level, const char *fmt, ...)
{
	if (level < current_level || level >= LOG_OFF)
		return;
	int saved_errno = errno;
	struct strbuf sb = STRBUF_INIT;
	if (log_fd != 2)
		add_timestamp(&sb);
	strbuf_addf(&sb, "%s[%d]: %s: ", process_name, (int)getpid(), level_names[level]);
	va_list ap;
	va_start(ap, fmt);
	strbuf_vaddf(&sb, fmt, ap);
	va_end(ap);
	strbuf_trim_trailing_newline(&sb);
	strbuf_addch(&sb, '\n');
	(void)!write(log_fd, sb.buf, sb.len);
	strbuf_release(&sb);
	errno = saved_errno;
}
