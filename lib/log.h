/* log.h — leveled logging to stderr or a log file (SIGHUP reopens it). AGOR_LOG_LEVEL picks the level.
 * Logs never go to stdout (which carries machine-readable results) and never carry secrets. */
#ifndef AGOR_LOG_H
#define AGOR_LOG_H

#include "common.h"

enum log_level { LOG_DEBUG, LOG_INFO, LOG_WARN, LOG_ERROR, LOG_OFF };

/* Names the process in every line ("agor daemon") and reads AGOR_LOG_LEVEL. */
void log_init(const char *applet);
/* Parses debug|info|warn|error|off; -1 when unknown. */
int log_level_parse(const char *s);
void log_set_level(enum log_level level);
/* Sends logs to path (appended, 0600) instead of stderr; -1 with errno on failure. */
int log_open_file(const char *path);
/* Reopens the log file (after rotation); no-op on stderr. */
int log_reopen(void);

void log_msg(enum log_level level, const char *fmt, ...) PRINTF_LIKE(2, 3);
#define log_debug(...) log_msg(LOG_DEBUG, __VA_ARGS__)
#define log_info(...)  log_msg(LOG_INFO, __VA_ARGS__)
#define log_warn(...)  log_msg(LOG_WARN, __VA_ARGS__)
#define log_error(...) log_msg(LOG_ERROR, __VA_ARGS__)

#endif
