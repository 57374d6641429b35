// Linkifier rows → Zulip's linkifier objects (GET /realm/linkifiers, realm_linkifiers).
import type { Linkifier as LinkifierRow } from '@parley/db';

/** Zulip's LinkifierDict, with the reverse-linkification fields of feature level 471. */
export function presentLinkifier(row: LinkifierRow): Record<string, unknown> {
  return {
    id: row.id,
    pattern: row.pattern,
    url_template: row.urlTemplate,
    example_input: row.exampleInput,
    reverse_template: row.reverseTemplate,
    alternative_url_templates: row.alternativeUrlTemplates,
  };
}
