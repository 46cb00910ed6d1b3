/* approvals_sshconfig.h — the code ssh would run because of ~/.ssh/config (the caller can write it): ProxyCommand,
 * LocalCommand, KnownHostsCommand, Match exec, PKCS#11 and security-key providers. Never runs ssh to find out. */
#ifndef AGOR_APPROVALS_SSHCONFIG_H
#define AGOR_APPROVALS_SSHCONFIG_H

/*
 * Contract
 * --------
 * appr_ssh_config_code() reads $HOME/.ssh/config (HOME as the run will see it) and, recursively to
 * APPR_SSH_INCLUDE_DEPTH, the files its Include lines name (relative to ~/.ssh, glob patterns
 * expanded). It returns NULL when no line names code, else a malloc'd reason naming the file, the line
 * and the keyword: ProxyCommand, LocalCommand, KnownHostsCommand, PKCS11Provider or SecurityKeyProvider
 * with any value but `none`, and a Match line with an `exec` criterion. Keywords are matched as ssh
 * does (case-insensitive, separated by blanks or '='). A missing file names nothing; an Include deeper
 * than the limit counts as code. /etc/ssh is root's and not read.
 * appr_uses_ssh(word_base, resolved_base, argv) is 1 for ssh, scp, sftp, rsync, and for git subcommands
 * that reach a remote (fetch, pull, push, clone, ls-remote, archive, remote, submodule).
 */

#define APPR_SSH_INCLUDE_DEPTH 8

char *appr_ssh_config_code(void);
int appr_uses_ssh(const char *word_base, const char *resolved_base, const char *const *argv);

#endif
