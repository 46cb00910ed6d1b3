/* banned.h — poisons libc calls that are easy to misuse (git's banned.h); every .c includes it last. Use strbuf,
 * snprintf or the x* helpers instead. Never include it before system headers. */
#ifndef AGOR_BANNED_H
#define AGOR_BANNED_H

#pragma GCC poison strcpy strcat sprintf vsprintf strtok gets strncpy strncat

#endif
