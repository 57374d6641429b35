// Which message events a narrowed queue accepts (Zulip's build_narrow_predicate). Registration
// allows only the operators decided here (queue-params.ts, Zulip's check_narrow_for_events); an
// `is:` operand it cannot decide matches every message, as in Zulip.
import type { NarrowTerm } from '@parley/events';

export interface NarrowableMessage {
  type: 'stream' | 'private';
  stream_id?: number;
  display_recipient?: string | { id: number; email: string }[];
  subject?: string;
  sender_id: number;
  sender_email: string;
}

/** Zulip's RESOLVED_TOPIC_PREFIX. */
const RESOLVED_PREFIX = '✔ ';

const lower = (value: unknown) => String(value).toLowerCase();

/** Whether the message matches the term; null when the event cannot tell (it matches then,
 * negated or not, as Zulip's predicate ignores negation). */
function matchesTerm(
  term: NarrowTerm,
  message: NarrowableMessage,
  flags: string[],
): boolean | null {
  const { operator, operand } = term;
  switch (operator) {
    case 'channel':
    case 'stream':
      if (message.type !== 'stream') return false;
      return typeof operand === 'number' || /^\d+$/.test(String(operand))
        ? message.stream_id === Number(operand)
        : lower(message.display_recipient) === lower(operand);
    case 'topic':
      return message.type === 'stream' && lower(message.subject ?? '') === lower(operand);
    case 'sender':
      return typeof operand === 'number'
        ? message.sender_id === operand
        : lower(message.sender_email) === lower(operand);
    case 'is':
      switch (operand) {
        case 'dm':
        case 'private':
          return message.type === 'private';
        // Zulip's predicate tests the personal mention flag for both (not wildcards, not
        // alert words), unlike GET /messages' is:mentioned and is:alerted.
        case 'mentioned':
        case 'alerted':
          return flags.includes('mentioned');
        case 'starred':
          return flags.includes('starred');
        case 'unread':
          return !flags.includes('read');
        case 'resolved':
          return message.type === 'stream' && (message.subject ?? '').startsWith(RESOLVED_PREFIX);
        default:
          return null;
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
  return narrow.every((term) => {
    const matched = matchesTerm(term, message, flags);
    return matched === null || matched !== (term.negated === true);
  });
}
