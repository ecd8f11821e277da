// The agent's control-plane client with the endpoints only tests and tools call — what a user of
// the control plane does (create and change listeners and deployments, redeploy, delete) and the
// reads the agent has no use for — so that the agent's own client (and its bundle) holds none of
// them. Same transport: the same retries, bounds and metrics.
import { z } from 'zod';
import { ControlPlaneClient } from '../../src/controlplane/client.ts';
import { type Parsed, parseResource } from '../../src/controlplane/parse.ts';
import {
  type AgentConnection,
  AgentConnectionList,
  Deployment,
  type DeploymentCreate,
  type DeploymentPatch,
  Listener,
  type ListenerWrite,
  OAuthProvider,
  Repository,
} from '../../src/controlplane/schemas/index.ts';
import { route } from '../../src/controlplane/transport.ts';

export class ControlPlaneTestClient extends ControlPlaneClient {
  // --- Deployments: what a user of the control plane does

  async createDeployment(body: DeploymentCreate): Promise<Deployment> {
    return parseResource(
      Deployment,
      await this.transport.json('POST', route('/v2/deployments'), { body }),
      'deployment',
    );
  }

  async patchDeployment(deploymentId: string, patch: DeploymentPatch): Promise<Deployment> {
    const body = await this.transport.json(
      'PATCH',
      route('/v2/deployments/{deployment_id}', { deployment_id: deploymentId }),
      { body: patch },
    );
    return parseResource(Deployment, body, 'deployment', deploymentId);
  }

  /** Marks the deployment AWAITING_DELETE; the listener removes its objects and reports it deleted. */
  async deleteDeployment(deploymentId: string): Promise<void> {
    await this.transport.send(
      'DELETE',
      route('/v2/deployments/{deployment_id}', { deployment_id: deploymentId }),
    );
  }

  async redeployRevision(deploymentId: string, revisionId: string): Promise<Deployment> {
    const path = route('/v2/deployments/{deployment_id}/revisions/{revision_id}/redeploy', {
      deployment_id: deploymentId,
      revision_id: revisionId,
    });
    return parseResource(
      Deployment,
      await this.transport.json('POST', path, { body: {} }),
      'deployment',
      deploymentId,
    );
  }

  // --- Listeners

  listeners(): AsyncGenerator<Parsed<Listener>> {
    return this.transport.paginate(route('/v2/listeners'), {}, Listener, 'listener');
  }

  async createListener(body: ListenerWrite): Promise<Listener> {
    return parseResource(
      Listener,
      await this.transport.json('POST', route('/v2/listeners'), { body }),
      'listener',
    );
  }

  // --- OAuth providers, agent connections, repositories

  async getOAuthProvider(providerId: string): Promise<OAuthProvider> {
    return parseResource(
      OAuthProvider,
      await this.transport.json(
        'GET',
        route('/v2/auth/providers/{provider_id}', { provider_id: providerId }),
      ),
      'oauth provider',
    );
  }

  async listOAuthProviders(): Promise<OAuthProvider[]> {
    return parseResource(
      z.array(OAuthProvider),
      await this.transport.json('GET', route('/v2/auth/providers')),
      'oauth provider list',
    );
  }

  async listRepohostRepositories(integrationId: string): Promise<Repository[]> {
    const body = await this.transport.json(
      'GET',
      route('/v1/integrations/repohost/{integration_id}/repos', { integration_id: integrationId }),
    );
    return parseResource(z.array(Repository), body, 'repository list', integrationId);
  }

  async listHostedRepohostRepositories(integrationId: string): Promise<Repository[]> {
    const body = await this.transport.json(
      'GET',
      route('/v1/integrations/hosted/repohost/{integration_id}/repos', { integration_id: integrationId }),
    );
    return parseResource(z.array(Repository), body, 'repository list', integrationId);
  }

  async listAgentConnections(agentId: string): Promise<AgentConnection[]> {
    const body = await this.transport.json(
      'GET',
      route('/v2/auth/agents/{agent_id}/connections', { agent_id: agentId }),
    );
    return parseResource(AgentConnectionList, body, 'agent connection list', agentId).data;
  }
}
