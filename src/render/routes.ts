// custom_url as a route to the main Service: an Ingress (render.ingress.className) or a Gateway API
// HTTPRoute (render.gateway.parentRefs) — never both, which the configuration refuses at load.

import { type KindSettings, kindEnabled } from '../objects/kinds.ts';
import { inputExcerpt } from '../report/terminalText.ts';
import type { RenderConfig } from './renderConfig.ts';

export type RouteKind = 'Ingress' | 'HTTPRoute';

/** Which kind of route `custom_url` becomes under this configuration, if any. */
export function routeKindOf(config: KindSettings): RouteKind | undefined {
  // The settings that turn each route kind on are the kind table's; the configuration refuses both.
  if (kindEnabled('HTTPRoute', config)) return 'HTTPRoute';
  if (kindEnabled('Ingress', config)) return 'Ingress';
  return undefined;
}

// What the Gateway API admits in an `Exact` or `PathPrefix` path (its CRD's validation rules).
const PATH_CHARACTERS = /^(?:[-A-Za-z0-9/._~!$&'()*+,;=:@]|%[0-9a-fA-F]{2})+$/;
const MAX_PATH = 1024;

/**
 * The path prefix an HTTPRoute matches for `custom_url`: `/` for a bare host or a URL without a
 * path, else the URL's path (dot segments resolved, no trailing slash: `/team-a` matches
 * `/team-a` and `/team-a/…`, not `/team-ab`). A string saying why, when no route can match it.
 */
export function routePathPrefix(customUrl: string): { path: string } | { problem: string } {
  const trimmed = customUrl.trim();
  if (!trimmed.includes('://')) return { path: '/' };
  let url: URL;
  try {
    url = new URL(trimmed);
  } catch {
    return { problem: 'is not a valid URL' };
  }
  if (url.search !== '' || url.hash !== '')
    return { problem: 'a route matches a host and a path: the URL may have no query or fragment' };
  const path = url.pathname.length > 1 ? url.pathname.replace(/\/+$/, '') : '/';
  if (path === '' || path === '/') return { path: '/' };
  if (
    path.length > MAX_PATH ||
    !PATH_CHARACTERS.test(path) ||
    path.includes('//') ||
    path.toLowerCase().includes('%2f')
  )
    return {
      problem: `path "${inputExcerpt(path)}" cannot be matched by a route (at most ${MAX_PATH} characters of a URL path, no empty segment, no encoded slash)`,
    };
  return { path };
}

/** The spec of the HTTPRoute of `host` and `path` to the main Service. */
export function httpRouteSpec(
  host: string,
  path: string,
  service: { readonly name: string; readonly port: number },
  config: Pick<RenderConfig, 'gateway'>,
): Record<string, unknown> {
  const rewrite =
    path !== '/' && config.gateway.rewritePathPrefix
      ? [
          {
            type: 'URLRewrite',
            urlRewrite: { path: { type: 'ReplacePrefixMatch', replacePrefixMatch: '/' } },
          },
        ]
      : undefined;
  return {
    parentRefs: config.gateway.parentRefs.map((ref) => ({ ...ref })),
    hostnames: [host],
    rules: [
      {
        matches: [{ path: { type: 'PathPrefix', value: path } }],
        ...(rewrite ? { filters: rewrite } : {}),
        backendRefs: [{ name: service.name, port: service.port }],
      },
    ],
  };
}
