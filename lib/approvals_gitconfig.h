/* approvals_gitconfig.h — the code a git command would run because of configuration the caller can write: the
 * repository's config and hooks, ~/.gitconfig, the XDG and system files. Never runs git to find out. */
#ifndef AGOR_APPROVALS_GITCONFIG_H
#define AGOR_APPROVALS_GITCONFIG_H

/*
 * Contract
 * --------
 * appr_git_config_code(cwd, argv) finds the repository git would use for argv (git's global -C and
 * --git-dir honoured, then discovery upwards from cwd with libgit2) and reads, with their includes,
 * the files git reads: /etc/gitconfig, $XDG_CONFIG_HOME/git/config (or ~/.config/git/config),
 * ~/.gitconfig (HOME as the run will see it), the repository's config and config.worktree. It returns
 * NULL when none names code to run, else a malloc'd reason naming the file and the key:
 *   core.fsmonitor (anything but a boolean), core.hooksPath (anything but /dev/null), core.sshCommand,
 *   core.gitProxy, core.alternateRefsCommand, diff.external, diff.*.command, diff.*.textconv,
 *   merge.*.driver, filter.*.clean|smudge|process, remote.*.uploadpack|receivepack,
 *   uploadpack.packObjectsHook, difftool.*.cmd, mergetool.*.cmd, interactive.diffFilter,
 *   submodule.*.update starting with '!', protocol.ext.allow other than never, protocol.allow always;
 *   credential.helper and gpg.program unless a plain program name (from the run's pinned PATH) with
 *   plain arguments — and any hook (an executable file not named *.sample) in the hooks directory.
 * The same holds for every submodule or nested repository git would enter (a gitlink of the index
 * whose path holds a repository), to a depth of APPR_GIT_NESTING and at most APPR_GIT_SUBMODULES in
 * all; more counts as code.
 * A file that cannot be parsed counts as code. Editors, pagers and askpass are not listed: the run's
 * environment sets GIT_EDITOR=: GIT_SEQUENCE_EDITOR=: GIT_ASKPASS= and its output is never a terminal.
 */

#define APPR_GIT_NESTING    4
#define APPR_GIT_SUBMODULES 64

char *appr_git_config_code(const char *cwd, const char *const *argv);

#endif
