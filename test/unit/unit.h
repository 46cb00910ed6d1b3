/* unit.h — the tiny C unit-test framework: TEST(name) registers a test, CHECK* record failures.
 * Each test runs in its own forked child so a crash or leaked state never affects the next. */
#ifndef AGOR_UNIT_H
#define AGOR_UNIT_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void unit_register(const char *name, void (*fn)(void), const char *file);
void unit_fail(const char *file, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* A scratch directory private to the running test (removed afterwards). */
const char *unit_tmpdir(void);
/* The n bytes at bytes in lowercase hex (malloc'd). */
char *unit_hex(const void *bytes, size_t n);

#define TEST(name)                                                                                                     \
	static void name(void);                                                                                        \
	__attribute__((constructor)) static void register_##name(void)                                                 \
	{                                                                                                              \
		unit_register(#name, name, __FILE__);                                                                  \
	}                                                                                                              \
	static void name(void)

#define CHECK(cond)                                                                                                    \
	do {                                                                                                           \
		if (!(cond))                                                                                           \
			unit_fail(__FILE__, __LINE__, "CHECK(%s)", #cond);                                             \
	} while (0)

#define CHECK_INT(a, b)                                                                                                \
	do {                                                                                                           \
		long long _a = (long long)(a), _b = (long long)(b);                                                    \
		if (_a != _b)                                                                                          \
			unit_fail(__FILE__, __LINE__, "%s == %lld, expected %s == %lld", #a, _a, #b, _b);              \
	} while (0)

#define CHECK_STR(a, b)                                                                                                \
	do {                                                                                                           \
		const char *_a = (a), *_b = (b);                                                                       \
		if (!_a || !_b || strcmp(_a, _b))                                                                      \
			unit_fail(__FILE__, __LINE__, "%s == \"%s\", expected \"%s\"", #a, _a ? _a : "(null)",         \
				  _b ? _b : "(null)");                                                                 \
	} while (0)

#define CHECK_CONTAINS(hay, needle)                                                                                    \
	do {                                                                                                           \
		const char *_h = (hay), *_n = (needle);                                                                \
		if (!_h || !strstr(_h, _n))                                                                            \
			unit_fail(__FILE__, __LINE__, "%s == \"%s\" does not contain \"%s\"", #hay,                    \
				  _h ? _h : "(null)", _n);                                                             \
	} while (0)

/* The n bytes at bytes, in lowercase hex, are the text expected. */
#define CHECK_HEX(bytes, n, expected)                                                                                  \
	do {                                                                                                           \
		char *_hex = unit_hex(bytes, n);                                                                       \
		CHECK_STR(_hex, expected);                                                                             \
		free(_hex);                                                                                            \
	} while (0)

#endif
