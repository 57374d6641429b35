// What a message report may say (Zulip's Realm.REPORT_MESSAGE_REASONS and
// MAX_REPORT_MESSAGE_EXPLANATION_LENGTH): /register lists the types as
// server_report_message_types, POST /messages/{id}/report accepts them
// (actions/message-reports.ts).
export const REPORT_MESSAGE_TYPES = [
  { key: 'spam', name: 'Spam' },
  { key: 'harassment', name: 'Harassment' },
  { key: 'inappropriate', name: 'Inappropriate content' },
  { key: 'norms', name: 'Violates community norms' },
  { key: 'other', name: 'Other reason' },
] as const;
export type ReportType = (typeof REPORT_MESSAGE_TYPES)[number]['key'];
export const REPORT_TYPE_KEYS = REPORT_MESSAGE_TYPES.map((type) => type.key) as [
  ReportType,
  ...ReportType[],
];

export const MAX_REPORT_DESCRIPTION_LENGTH = 1000;
