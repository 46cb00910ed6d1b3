/* noop_executor.c — the floor under an executor round trip: a static binary that speaks the executor's protocol
 * and does nothing else (reads the payload to its end, prints one success line). Spawned exactly as ./agor is,
 * it is what any executor costs before its own work; test/bench/executor prints agor's ratio against it. */
#include <unistd.h>

int main(void)
{
	static const char line[] = "{\"success\":true,\"data\":{\"dryRun\":true}}\n";
	char buf[4096];
	while (read(0, buf, sizeof(buf)) > 0)
		;
	return write(1, line, sizeof(line) - 1) == (ssize_t)(sizeof(line) - 1) ? 0 : 1;
}
