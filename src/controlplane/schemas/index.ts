// Zod schemas for every resource of the control-plane interface; types come from z.infer.
export * from './auth.ts';
export * from './common.ts';
export * from './deployment.ts';
export * from './inputCaps.ts';
export * from './listener.ts';
export * from './repository.ts';
export * from './revision.ts';
export * from './statusReport.ts';
