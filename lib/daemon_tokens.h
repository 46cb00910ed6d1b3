/* daemon_tokens.h — user access tokens for TCP clients: auth.token makes a connection act as the token's user;
 * tokens.create|list|revoke manage them. Features layer (daemon.h). */
#ifndef AGOR_DAEMON_TOKENS_H
#define AGOR_DAEMON_TOKENS_H

#include "rpc.h"

RPC_METHOD(method_auth_token);	  /* auth.token */
RPC_METHOD(method_tokens_create); /* tokens.create */
RPC_METHOD(method_tokens_list);	  /* tokens.list */
RPC_METHOD(method_tokens_revoke); /* tokens.revoke */

#endif
