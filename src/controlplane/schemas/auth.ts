// OAuth providers (`GET /v2/auth/providers`) and agent connections
// (`GET /v2/auth/agents/{agent_id}/connections`). The interface does not say which fields are
// required, so everything but the id is optional.
import { z } from 'zod';
import { DateTime } from './common.ts';

export const OAuthProvider = z.object({
  id: z.string(),
  organization_id: z.string().nullish(),
  provider_id: z.string().nullish(),
  name: z.string().nullish(),
  client_id: z.string().nullish(),
  auth_url: z.string().nullish(),
  token_url: z.string().nullish(),
  uses_pkce: z.boolean().nullish(),
  code_challenge_method: z.string().nullish(),
  created_at: DateTime.nullish(),
  updated_at: DateTime.nullish(),
  provider_type: z.string().nullish(),
  mcp_server_url: z.string().nullish(),
  token_endpoint_auth_method: z.string().nullish(),
  is_dynamic_client: z.boolean().nullish(),
});
export type OAuthProvider = z.infer<typeof OAuthProvider>;

export const AgentConnection = z.object({
  id: z.string(),
  agent_id: z.string().nullish(),
  oauth_token_id: z.string().nullish(),
  provider_id: z.string().nullish(),
  provider_account_label: z.string().nullish(),
  scopes: z.array(z.string()).nullish(),
  expires_at: DateTime.nullish(),
  created_by: z.string().nullish(),
  created_at: DateTime.nullish(),
});
export type AgentConnection = z.infer<typeof AgentConnection>;

export const AgentConnectionList = z.object({ data: z.array(AgentConnection) });
