// Widgets (Zulip's zerver/lib/widget.py and the poll/todo checks of zerver/lib/validator.py):
// a message whose first word is /poll or /todo gets a "widget" submessage describing it, and
// the submessages that follow (votes, options, tasks) are checked for the widget's shape. The
// server keeps no widget state: clients fold the submessages, in order, into what they show.
import { query, statement, type Message } from '@parley/db';
import { JsonableError } from '@parley/errors';

export type WidgetType = 'poll' | 'todo';

/** A widget submessage's description: a /poll or /todo message's, or a bot's zform
 * (`widget_content` of POST /messages, checkWidgetContent). */
export interface WidgetContent {
  widget_type: WidgetType | 'zform';
  extra_data: PollExtraData | TodoExtraData | Record<string, unknown>;
}

interface PollExtraData {
  question: string;
  options: string[];
}

interface TodoExtraData {
  task_list_title: string;
  tasks: { task: string; desc: string }[];
}

const WIDGET_TYPES: readonly string[] = ['poll', 'todo'];

/** Zulip's get_widget_data: the widget a message's content starts, if any. Its first token
 * (up to any whitespace) must be exactly /poll or /todo; the rest of that line is the
 * question or title, and each later non-blank line an option or task, a leading list marker
 * dropped. */
export function widgetOf(content: string): WidgetContent | null {
  const first = content.split(/\s/u, 1)[0]!;
  if (!first.startsWith('/')) return null;
  const type = first.slice(1);
  if (!WIDGET_TYPES.includes(type)) return null;
  // Python's str.replace(token, "", 1): the first occurrence, which is the first token.
  const [heading, ...rest] = pythonSplitLines(content.replace(first, ''));
  const title = heading ? heading.trim() : '';
  const items = rest
    .map((line) => line.trim().replace(LIST_MARKER, ''))
    .filter((item) => item.length > 0);
  if (type === 'poll')
    return { widget_type: 'poll', extra_data: { question: title, options: items } };
  return {
    widget_type: 'todo',
    extra_data: {
      task_list_title: title,
      // A task's description follows the first ": ".
      tasks: items.map((item) => {
        const at = item.indexOf(': ');
        return at === -1
          ? { task: item.trim(), desc: '' }
          : { task: item.slice(0, at).trim(), desc: item.slice(at + 2).trim() };
      }),
    },
  };
}

/** Zulip's re.sub(r"(\s*[-*]?\s*)", "", line, count=1) on a stripped line: an optional list
 * marker and the spaces after it. */
const LIST_MARKER = /^\s*[-*]?\s*/u;

/** Python's str.splitlines: \n, \r\n, \r and the other Unicode line boundaries, no trailing
 * empty line. */
function pythonSplitLines(text: string): string[] {
  // Python counts the file, group and record separators (control characters) as line breaks.
  // eslint-disable-next-line no-control-regex
  const lines = text.split(/\r\n|[\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]/u);
  if (lines.length > 0 && lines[lines.length - 1] === '') lines.pop();
  return lines;
}

/** Zulip's MAX_IDX, which the clients' widgets share. */
const MAX_IDX = 1000;

type Check = (name: string, value: unknown) => void;

const isString: Check = (name, value) => {
  if (typeof value !== 'string') throw new JsonableError(`${name} is not a string`);
};
const isBoolean: Check = (name, value) => {
  if (typeof value !== 'boolean') throw new JsonableError(`${name} is not a boolean`);
};
const isInt: Check = (name, value) => {
  if (typeof value !== 'number' || !Number.isInteger(value))
    throw new JsonableError(`${name} is not an integer`);
};
const intRange =
  (min: number, max: number): Check =>
  (name, value) => {
    isInt(name, value);
    if ((value as number) < min) throw new JsonableError(`${name} is too small`);
    if ((value as number) > max) throw new JsonableError(`${name} is too large`);
  };
const intIn =
  (allowed: readonly number[]): Check =>
  (name, value) => {
    isInt(name, value);
    if (!allowed.includes(value as number)) throw new JsonableError(`Invalid ${name}`);
  };

/** Zulip's check_dict_only: exactly these keys, each passing its check. */
function checkDictOnly(name: string, value: Record<string, unknown>, keys: [string, Check][]) {
  for (const [key, check] of keys) {
    if (!(key in value)) throw new JsonableError(`${key} key is missing from ${name}`);
    check(`${name}["${key}"]`, value[key]);
  }
  const unexpected = Object.keys(value).filter((key) => !keys.some(([known]) => known === key));
  if (unexpected.length > 0)
    throw new JsonableError(`Unexpected arguments: ${unexpected.join(', ')}`);
}

/** The `type` every widget submessage names, checked as Zulip's check_dict([("type", ...)]). */
function typed(name: string, data: unknown): Record<string, unknown> & { type: string } {
  if (typeof data !== 'object' || data === null || Array.isArray(data))
    throw new JsonableError(`${name} is not a dict`);
  const record = data as Record<string, unknown>;
  if (!('type' in record)) throw new JsonableError(`type key is missing from ${name}`);
  isString(`${name}["type"]`, record.type);
  return record as Record<string, unknown> & { type: string };
}

/** Zulip's validate_poll_data: votes and new options from anyone who can read the message,
 * the question only from the poll's author. Only shapes are checked: a vote for an option that
 * does not exist is stored, and clients ignore it. */
function checkPollData(data: unknown, isAuthor: boolean): void {
  const name = 'poll data';
  const poll = typed(name, data);
  switch (poll.type) {
    case 'vote':
      return checkDictOnly(name, poll, [
        ['type', isString],
        ['key', isString],
        ['vote', intIn([1, -1])],
      ]);
    case 'question':
      if (!isAuthor)
        throw new JsonableError("You can't edit a question unless you are the author.");
      return checkDictOnly(name, poll, [
        ['type', isString],
        ['question', isString],
      ]);
    case 'new_option':
      return checkDictOnly(name, poll, [
        ['type', isString],
        ['option', isString],
        ['idx', intRange(0, MAX_IDX)],
      ]);
    default:
      throw new JsonableError(`Unknown type for poll data: ${poll.type}`);
  }
}

/** Zulip's validate_todo_data: new tasks and strikes from anyone who can read the message, the
 * title only from the list's author. */
function checkTodoData(data: unknown, isAuthor: boolean): void {
  const name = 'todo data';
  const todo = typed(name, data);
  switch (todo.type) {
    case 'new_task':
      return checkDictOnly(name, todo, [
        ['type', isString],
        ['key', intRange(0, MAX_IDX)],
        ['task', isString],
        ['desc', isString],
        ['completed', isBoolean],
      ]);
    case 'strike':
      return checkDictOnly(name, todo, [
        ['type', isString],
        ['key', isString],
      ]);
    case 'new_task_list_title':
      if (!isAuthor)
        throw new JsonableError("You can't edit the task list title unless you are the author.");
      return checkDictOnly(name, todo, [
        ['type', isString],
        ['title', isString],
      ]);
    default:
      throw new JsonableError(`Unknown type for todo data: ${todo.type}`);
  }
}

/** A submessage's content for a message whose widget is `widgetType` (null: no widget, or one
 * whose stored description does not parse; then any JSON goes, as in Zulip). */
export function checkSubmessageContent(
  content: string,
  widgetType: string | null,
  isAuthor: boolean,
): void {
  let data: unknown;
  try {
    data = JSON.parse(content);
  } catch {
    throw new JsonableError('Invalid json for submessage');
  }
  if (widgetType === 'poll') checkPollData(data, isAuthor);
  else if (widgetType === 'todo') checkTodoData(data, isAuthor);
}

/** Whether the message's sender has attached a submessage, and the content of its first
 * widget submessage (which names the widget's type). */
const submessageState = statement<
  { senderStarted: boolean; widget: string | null },
  [number, number]
>(`
  SELECT EXISTS (SELECT 1 FROM submessage WHERE message_id = $1 AND sender_id = $2)
      AS "senderStarted",
    (SELECT content FROM submessage WHERE message_id = $1 AND msg_type = 'widget'
      ORDER BY id LIMIT 1) AS widget`);

/** What decides who may add a submessage to `message`, and what it must look like. */
export async function widgetStateOf(
  message: Pick<Message, 'id' | 'senderId'>,
): Promise<{ senderStarted: boolean; widgetType: string | null }> {
  const [row] = await query(submessageState, [message.id, message.senderId]);
  return { senderStarted: row!.senderStarted, widgetType: widgetTypeOf(row!.widget) };
}

const hasSubmessages = statement<{ exists: boolean }, [number]>(
  `SELECT EXISTS (SELECT 1 FROM submessage WHERE message_id = $1) AS exists`,
);

/** Zulip's is_widget_message: every message with submessages is a widget, whose content
 * cannot change ("Widgets cannot be edited."). */
export async function isWidgetMessage(messageId: number): Promise<boolean> {
  const [row] = await query(hasSubmessages, [messageId]);
  return row!.exists;
}

/** Zulip's get_widget_type: the widget_type of a message's first widget submessage's content,
 * null when there is none or it does not say. */
export function widgetTypeOf(firstWidgetContent: string | null): string | null {
  if (firstWidgetContent === null) return null;
  try {
    const data: unknown = JSON.parse(firstWidgetContent);
    if (typeof data === 'object' && data !== null && !Array.isArray(data)) {
      const type = (data as Record<string, unknown>).widget_type;
      return typeof type === 'string' ? type : null;
    }
  } catch {
    // Not JSON: no widget type, as in Zulip.
  }
  return null;
}

/** Zulip's check_dict: these keys, each passing its check; others may be there too. */
function checkDict(name: string, value: unknown, keys: [string, Check][]): void {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new JsonableError(`${name} is not a dict`);
  const record = value as Record<string, unknown>;
  for (const [key, check] of keys) {
    if (!(key in record)) throw new JsonableError(`${key} key is missing from ${name}`);
    check(`${name}["${key}"]`, record[key]);
  }
}

const listOf =
  (item: Check): Check =>
  (name, value) => {
    if (!Array.isArray(value)) throw new JsonableError(`${name} is not a list`);
    value.forEach((element, index) => item(`${name}[${index}]`, element));
  };

const zformChoice: Check = (name, value) =>
  checkDict(name, value, [
    ['short_name', isString],
    ['long_name', isString],
    ['reply', isString],
  ]);

/** POST /messages' `widget_content` (Zulip's check_message with check_widget_content): JSON
 * describing a widget, today only a zform of choices (the buttons bots such as Zulip's trivia
 * quiz offer). Its errors start with "Widgets: ". JSON null is no widget, a choice of ours
 * (Zulip answers "widget_content is not a dict"): Zulip's Python client sends every None as
 * `null`, and its bots library passes widget_content=None with every plain reply. */
export function checkWidgetContent(raw: string): WidgetContent | null {
  let content: unknown;
  try {
    content = JSON.parse(raw);
  } catch {
    throw new JsonableError('Widgets: API programmer sent invalid JSON content');
  }
  if (content === null) return null;
  try {
    return checkedWidgetContent(content);
  } catch (error) {
    if (error instanceof JsonableError) throw new JsonableError(`Widgets: ${error.message}`);
    throw error;
  }
}

function checkedWidgetContent(content: unknown): WidgetContent {
  if (typeof content !== 'object' || content === null || Array.isArray(content))
    throw new JsonableError('widget_content is not a dict');
  const record = content as Record<string, unknown>;
  if (!('widget_type' in record)) throw new JsonableError('widget_type is not in widget_content');
  if (!('extra_data' in record)) throw new JsonableError('extra_data is not in widget_content');
  const { widget_type: widgetType, extra_data: extraData } = record;
  if (typeof extraData !== 'object' || extraData === null || Array.isArray(extraData))
    throw new JsonableError('extra_data is not a dict');
  const extra = extraData as Record<string, unknown>;
  if (widgetType !== 'zform') throw new JsonableError(`unknown widget type: ${String(widgetType)}`);
  if (!('type' in extra)) throw new JsonableError('zform is missing type field');
  if (extra.type !== 'choices')
    throw new JsonableError(`unknown zform type: ${String(extra.type)}`);
  checkDict('extra_data', extra, [
    ['type', isString],
    ['heading', isString],
    ['choices', listOf(zformChoice)],
  ]);
  // Stored as sent, keys Zulip does not check included (Zulip stores the parsed dict).
  return { widget_type: 'zform', extra_data: extra };
}
