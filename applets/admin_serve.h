/* admin_serve.h — `agor admin serve`, the root end of the privileged socket (docs/admin.md#socket), and the one entry
 * of admin.c it shares. */
#ifndef AGOR_ADMIN_SERVE_H
#define AGOR_ADMIN_SERVE_H

#include "adminops.h"

/* argv[0] is "serve". Runs until killed; 2 on a usage error, 1 when it cannot listen. */
int admin_serve_main(int argc, char **argv);
/* admin.c: runs one call parsed by adminops_parse and prints its report (the --json line when call->json). */
int admin_run_call(const struct admin_call *call);

#endif
