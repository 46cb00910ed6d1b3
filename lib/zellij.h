/* zellij.h — zellij for terminals (docs/terminals.md#zellij): the config.kdl agor installs, its path, and the
 * command lines the executor runs. Never writes outside the zellij directory it is given.
 *
 * Contract
 *   zellij_config_kdl(dir, out): the configuration text — session_serialization true, session_folder
 *     "<dir>/sessions", and an interface as quiet as an embedded terminal needs (no frames, compact layout,
 *     no tips, detach on force close).
 *   zellij_install_config(dir, &changed, e): creates dir and dir/sessions (0700) and writes dir/config.kdl
 *     (0644, atomically, via a temporary file) unless it already holds exactly that text; idempotent.
 *   zellij_attach_argv(config, session, argv):  zellij --config CONFIG attach SESSION --create
 *   zellij_tab_argv(session, tab, argv):        zellij --session SESSION action go-to-tab-name --create TAB
 */
#ifndef AGOR_ZELLIJ_H
#define AGOR_ZELLIJ_H

#include "err.h"
#include "strbuf.h"
#include "strvec.h"

void zellij_config_kdl(const char *dir, struct strbuf *out);
char *zellij_config_path(const char *dir);
int zellij_install_config(const char *dir, int *changed, struct err *e);
void zellij_attach_argv(const char *config, const char *session, struct strvec *argv);
void zellij_tab_argv(const char *session, const char *tab, struct strvec *argv);

#endif
