/* config_edit.h — `agor config set`: changes one key of config.yaml in place, keeping every other line.
 * Never writes a value the loader would refuse, never leaves a half-written file, never follows a symlink. */
#ifndef AGOR_CONFIG_EDIT_H
#define AGOR_CONFIG_EDIT_H

/*
 * Contract
 * --------
 * config_file_set(path, key, value) is the one writer of config.yaml (lib/config only reads it):
 *  1. the key and value are judged exactly as a command-line flag is (config_set_flag): an unknown
 *     key or a bad value is refused (E_CONFIG, "PATH: KEY: why") before anything is written;
 *  2. the file is edited as text, not re-emitted: libyaml's parser gives the position of the
 *     key's value, which alone is replaced; a missing key is inserted as the first line under its
 *     section (indented like its siblings), missing sections are appended at the end. Comments,
 *     blank lines, order, quoting of the other lines all stay byte for byte. A section written in
 *     flow style ({…}) or a non-scalar where the value belongs is refused (edit those by hand);
 *  3. the result goes to a temporary file beside it (O_EXCL, mode 0600 or the file's own mode if
 *     stricter), is fsync'd, must load with the real loader (config_load), then is renamed over
 *     the file and the directory fsync'd. A failure at any step leaves the file as it was;
 *  4. writers serialise on flock() of the directory, so two concurrent sets both land.
 * The file may be missing (it is created 0600; its directory must exist); an existing one must be
 * a regular file (not a symlink) that passes config_check_file_security.
 * Values are written plain when that reads back as the same text, else double-quoted; integers,
 * booleans and enums are always plain (quoting would make them strings); the empty string of a
 * nullable key is written as null.
 */

#include "err.h"
#include "strbuf.h"

int config_file_set(const char *path, const char *key, const char *value, struct err *e);

/* Step 2 alone, on text (exposed for unit tests): the edited text into out. rendered is the YAML
 * text of the value (see config_render_value). -1 with E_CONFIG when the text cannot be edited. */
int config_text_set(const char *name, const char *text, size_t len, const char *key, const char *rendered,
		    struct strbuf *out, struct err *e);
/* The YAML scalar text for value under key's type (plain or double-quoted); NULL for an unknown key. */
char *config_render_value(const char *key, const char *value);

#endif
