// The alerts of deploy/monitoring/prometheus-rule.yaml as a table for docs/operating.md: each
// alert's name, severity, how long its condition must hold, and its summary.
import { parse } from 'yaml';
import { z } from 'zod';

const RuleFile = z.object({
  spec: z.object({
    groups: z.array(
      z.object({
        rules: z.array(
          z.object({
            alert: z.string().optional(),
            for: z.string().optional(),
            labels: z.record(z.string(), z.string()).optional(),
            annotations: z.record(z.string(), z.string()).optional(),
          }),
        ),
      }),
    ),
  }),
});

export function alertsTableMarkdown(ruleFileText: string): string {
  const rules = RuleFile.parse(parse(ruleFileText)).spec.groups.flatMap((group) => group.rules);
  const rows = rules.flatMap((rule) =>
    rule.alert === undefined
      ? []
      : [
          `| \`${rule.alert}\` | ${rule.labels?.severity ?? ''} | ${rule.for ?? '–'} | ${(rule.annotations?.summary ?? '').replaceAll('|', '\\|')} |`,
        ],
  );
  return ['| alert | severity | for | summary |', '|---|---|---|---|', ...rows].join('\n');
}
