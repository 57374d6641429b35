// Which message events a narrowed queue accepts (Zulip's build_narrow_predicate). Operators
// that need the database (search, has:…) cannot be decided here and match nothing, as in Zulip.
import type { NarrowTerm } from '@parley/events';

export interface NarrowableMessage {
  type: 'stream' | 'private';
  stream_id?: number;
  display_recipient?: string | { id: number; email: string }[];
  subject?: string;
  sender_id: number;
  sender_email: string;
}

const lower = (value: unknown) => String(value).toLowerCase();

function matchesTerm(term: NarrowTerm, message: NarrowableMessage, flags: string[]): boolean {
  const { operator, operand } = term;
  switch (operator) {
    case 'channel':
    case 'stream':
      if (message.type !== 'stream') return false;
      return typeof operand === 'number' || /^\d+$/.test(String(operand))
        ? message.stream_id === Number(operand)
        : lower(message.display_recipient) === lower(operand);
    case 'topic':
    case 'subject':
      return message.type === 'stream' && lower(message.subject ?? '') === lower(operand);
    case 'sender':
      return typeof operand === 'number'
        ? message.sender_id === operand
        : lower(message.sender_email) === lower(operand);
    case 'dm':
    case 'pm-with': {
      if (message.type !== 'private' || !Array.isArray(message.display_recipient)) return false;
      const wanted = (Array.isArray(operand) ? operand : String(operand).split(',')).map(lower);
      const recipients = message.display_recipient.flatMap((r) => [lower(r.id), lower(r.email)]);
      return wanted.every((who) => recipients.includes(who));
    }
    case 'is':
      switch (operand) {
        case 'dm':
        case 'private':
          return message.type === 'private';
        case 'mentioned':
          return [
            'mentioned',
            'stream_wildcard_mentioned',
            'topic_wildcard_mentioned',
            'wildcard_mentioned',
          ].some((f) => flags.includes(f));
        case 'starred':
          return flags.includes('starred');
        case 'alerted':
          return flags.includes('has_alert_word');
        case 'unread':
          return !flags.includes('read');
        default:
          return false;
      }
    default:
      return false;
  }
}

export function matchesNarrow(
  narrow: NarrowTerm[],
  message: NarrowableMessage,
  flags: string[],
): boolean {
  return narrow.every((term) => matchesTerm(term, message, flags) !== (term.negated === true));
}
