/* version.h — agor's own version and the versions of every linked library, for `agor --version`.
 * Never initialises a library to ask its version (libgit2 init costs milliseconds). */
#ifndef AGOR_VERSION_H
#define AGOR_VERSION_H

#include "strbuf.h"

const char *agor_version(void);
/* One "name version (Debian revision, notes)" line per component. */
void version_describe(struct strbuf *out);

#endif
