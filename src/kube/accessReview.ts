// Asking the API server what the caller may do: SelfSubjectAccessReview (authorization.k8s.io/v1)
// for each verb on each resource, and SelfSubjectReview (authentication.k8s.io/v1) for who it is.
import { z } from 'zod';
import type { CallOptions, KubeClient } from './kubeClient.ts';

/** One question: may I `verb` `resource` (of `group`) in `namespace`? */
export interface AccessQuestion {
  readonly namespace: string;
  /** '' for the core group. */
  readonly group: string;
  readonly resource: string;
  /** One object (RBAC `resourceNames`); absent: any. */
  readonly name?: string | undefined;
  readonly verb: string;
}

export interface AccessAnswer extends AccessQuestion {
  readonly allowed: boolean;
  /** The authorizer's explanation, when it gave one (RBAC names the binding that allowed it). */
  readonly reason: string | undefined;
}

function resourceAttributes(resource: string): { resource: string; subresource?: string } {
  const [main = resource, subresource] = resource.split('/');
  return subresource === undefined ? { resource: main } : { resource: main, subresource };
}

const ReviewStatus = z.looseObject({
  status: z.looseObject({
    allowed: z.boolean(),
    denied: z.boolean().optional(),
    reason: z.string().optional(),
    evaluationError: z.string().optional(),
  }),
});

const SelfReview = z.looseObject({
  status: z.looseObject({ userInfo: z.looseObject({ username: z.string().optional() }).optional() }),
});

const ACCESS_REVIEW_PATH = '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews';
const SELF_REVIEW_PATH = '/apis/authentication.k8s.io/v1/selfsubjectreviews';
const DEFAULT_CONCURRENCY = 8;

/** Asks one SelfSubjectAccessReview per question, a few at a time; answers in question order. */
export async function reviewAccess(
  client: KubeClient,
  questions: readonly AccessQuestion[],
  options: CallOptions & { readonly concurrency?: number } = {},
): Promise<AccessAnswer[]> {
  const answers: AccessAnswer[] = new Array(questions.length);
  let next = 0;
  const worker = async () => {
    for (;;) {
      const index = next++;
      const question = questions[index];
      if (question === undefined) return;
      answers[index] = await reviewOne(client, question, options);
    }
  };
  const workers = Math.max(1, Math.min(options.concurrency ?? DEFAULT_CONCURRENCY, questions.length));
  await Promise.all(Array.from({ length: workers }, worker));
  return answers;
}

async function reviewOne(
  client: KubeClient,
  question: AccessQuestion,
  options: CallOptions,
): Promise<AccessAnswer> {
  const body = await client.requestJson('POST', ACCESS_REVIEW_PATH, {
    ...options,
    kind: 'SelfSubjectAccessReview',
    body: {
      apiVersion: 'authorization.k8s.io/v1',
      kind: 'SelfSubjectAccessReview',
      spec: {
        resourceAttributes: {
          namespace: question.namespace,
          group: question.group,
          // `pods/log` is asked as its resource and subresource, as RBAC holds it.
          ...resourceAttributes(question.resource),
          ...(question.name === undefined ? {} : { name: question.name }),
          verb: question.verb,
        },
      },
    },
  });
  const parsed = ReviewStatus.safeParse(body);
  if (!parsed.success) {
    return { ...question, allowed: false, reason: 'the API server sent no review status' };
  }
  const { allowed, reason, evaluationError } = parsed.data.status;
  return { ...question, allowed, reason: reason || evaluationError || undefined };
}

/** The user name the API server knows the caller by, or undefined when it cannot say (API before 1.28). */
export async function selfUserName(
  client: KubeClient,
  options: CallOptions = {},
): Promise<string | undefined> {
  try {
    const body = await client.requestJson('POST', SELF_REVIEW_PATH, {
      ...options,
      kind: 'SelfSubjectReview',
      body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' },
    });
    const parsed = SelfReview.safeParse(body);
    return parsed.success ? parsed.data.status.userInfo?.username : undefined;
  } catch {
    // Only a courtesy for the fix text: its absence is not a failure of anything checked.
    return undefined;
  }
}
