/* test_exec_env.c — unit tests of the exec.run env allowlist (exec_env.h) and of its setting's check.
 * Never touches the process environment. */
#include "config.h"
#include "exec_env.h"
#include "unit.h"
#include "banned.h"

TEST(exec_env_passes_only_listed_names)
{
	const char *list = EXEC_ENV_DEFAULT;
	CHECK(exec_env_refusal(list, "LANG") == NULL);
	CHECK(exec_env_refusal(list, "LC_ALL") == NULL);
	CHECK(exec_env_refusal(list, "LC_") == NULL);
	CHECK(exec_env_refusal(list, "TZ") == NULL);
	CHECK(exec_env_refusal(list, "TZX") != NULL);
	CHECK(exec_env_refusal(list, "LANGUAGE") != NULL);
	static const char *const attacks[] = { "GIT_SSH_COMMAND",
					       "GIT_EXEC_PATH",
					       "GIT_ALLOW_PROTOCOL",
					       "GIT_CONFIG_COUNT",
					       "GIT_CONFIG_PARAMETERS",
					       "SSH_ASKPASS",
					       "LD_PRELOAD",
					       "HTTPS_PROXY",
					       "https_proxy",
					       "PAGER",
					       "EDITOR",
					       "BASH_ENV",
					       "ENV",
					       "AGOR_HOME" };
	for (size_t i = 0; i < ARRAY_SIZE(attacks); i++)
		CHECK(exec_env_refusal(list, attacks[i]) != NULL);
	CHECK(exec_env_refusal(NULL, "LANG") != NULL);
}

TEST(exec_env_keeps_agors_names_whatever_the_list_says)
{
	const char *list = "LD_*:PATH:AGOR_HOME:GIT_CONFIG_COUNT:MY_*";
	CHECK_STR(exec_env_refusal(list, "LD_PRELOAD"), EXEC_ENV_KEPT);
	CHECK_STR(exec_env_refusal(list, "PATH"), EXEC_ENV_KEPT);
	CHECK_STR(exec_env_refusal(list, "AGOR_HOME"), EXEC_ENV_KEPT);
	CHECK_STR(exec_env_refusal(list, "GIT_CONFIG_COUNT"), EXEC_ENV_KEPT);
	CHECK(exec_env_refusal(list, "MY_VAR") == NULL);
	CHECK_STR(exec_env_refusal(list, "MY-VAR"), EXEC_ENV_INVALID);
	CHECK_STR(exec_env_refusal(list, "A=B"), EXEC_ENV_INVALID);
	CHECK_STR(exec_env_refusal(list, ""), EXEC_ENV_INVALID);
}

TEST(exec_env_names_agor_keeps_are_exactly_the_dangerous_ones)
{
	static const char *const ours[] = {
		"PATH",	      "HOME",	      "SHELL",		 "IFS",	       "BASH_ENV",
		"ENV",	      "NODE_OPTIONS", "RUBYOPT",	 "LD_PRELOAD", "DYLD_INSERT_LIBRARIES",
		"PYTHONPATH", "PERL5LIB",     "GIT_CONFIG_COUNT"
	};
	for (size_t i = 0; i < ARRAY_SIZE(ours); i++)
		CHECK(exec_env_name_ours(ours[i]));
	static const char *const theirs[] = { "LANG", "LC_ALL", "TZ", "TERM", "MY_VAR", "GIT_AUTHOR_NAME" };
	for (size_t i = 0; i < ARRAY_SIZE(theirs); i++)
		CHECK(!exec_env_name_ours(theirs[i]));
}

TEST(exec_env_setting_is_checked)
{
	struct config *cfg = config_new();
	struct err e = ERR_INIT;
	CHECK_INT(config_set_flag(cfg, "execution.exec_env_allow", "LANG:MY_*", &e), 0);
	CHECK_INT(config_set_flag(cfg, "execution.exec_env_allow", "*", &e), -1);
	CHECK_CONTAINS(e.message, "lone '*'");
	err_clear(&e);
	static const char *const bad[] = { "LANG:", ":LANG", "LA NG", "LANG::TZ", "1X", "A*B", "**" };
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		CHECK_INT(config_set_flag(cfg, "execution.exec_env_allow", bad[i], &e), -1);
		CHECK_CONTAINS(e.message, "execution.exec_env_allow");
		err_clear(&e);
	}
	config_free(cfg);
}
