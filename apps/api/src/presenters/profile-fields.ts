// Custom profile field rows → the field objects of GET /realm/profile_fields, the
// custom_profile_fields event and the register state (Zulip's CustomProfileField.as_dict).
import type { CustomProfileField } from '@parley/db';

export interface ProfileFieldJson {
  id: number;
  name: string;
  type: number;
  hint: string;
  /** JSON text ('' for types without data). */
  field_data: string;
  order: number;
  required: boolean;
  editable_by_user: boolean;
  /** Present only when true. */
  display_in_profile_summary?: true;
  /** Present only when true (spec 2.8). */
  use_for_user_matching?: true;
}

export function presentProfileField(field: CustomProfileField): ProfileFieldJson {
  return {
    id: field.id,
    name: field.name,
    type: field.fieldType,
    hint: field.hint,
    field_data: field.fieldData,
    order: field.order,
    required: field.required,
    editable_by_user: field.editableByUser,
    ...(field.displayInProfileSummary ? { display_in_profile_summary: true as const } : {}),
    ...(field.useForUserMatching ? { use_for_user_matching: true as const } : {}),
  };
}
