// GET /messages/{id}/history (spec 4.11): snapshots oldest first, each with the values after
// that edit, the previous values of what changed, and an HTML diff of content edits.
import type { Message } from '@parley/db';
import { topicName, type EditHistoryEntry } from '../presenters/messages';
import { htmlDiff } from './html-diff';

type Snapshot = Record<string, unknown>;

export function editHistorySnapshots(
  message: Message,
  policy: number,
  allowEmptyTopicName: boolean,
): Snapshot[] {
  const name = (topic: string) =>
    message.isChannelMessage ? topicName(topic, allowEmptyTopicName) : '';
  const entries = (message.editHistory as EditHistoryEntry[] | null) ?? [];
  let topic = message.subject;
  let content = message.content;
  let rendered = message.renderedContent ?? '';
  const edits: Snapshot[] = [];
  // Stored newest first: walk back from the current values.
  for (const entry of entries) {
    const snapshot: Snapshot = {
      topic: name(topic),
      content,
      rendered_content: rendered,
      timestamp: entry.timestamp,
      user_id: entry.user_id,
    };
    if (entry.prev_topic !== undefined) {
      snapshot.prev_topic = name(entry.prev_topic);
      topic = entry.prev_topic;
    }
    if (entry.prev_stream !== undefined)
      Object.assign(snapshot, { prev_stream: entry.prev_stream, stream: entry.stream });
    if (entry.prev_content !== undefined) {
      const prevRendered = entry.prev_rendered_content ?? '';
      Object.assign(snapshot, {
        prev_content: entry.prev_content,
        prev_rendered_content: prevRendered,
        content_html_diff: htmlDiff(prevRendered, rendered),
      });
      content = entry.prev_content;
      rendered = prevRendered;
    }
    edits.push(snapshot);
  }
  const original: Snapshot = {
    topic: name(topic),
    content,
    rendered_content: rendered,
    timestamp: Math.floor(message.dateSent.getTime() / 1000),
    user_id: message.senderId,
  };
  const snapshots = [original, ...edits.reverse()];
  // "Moves only": content-only edits vanish, and mixed ones lose their content changes.
  if (policy === 2)
    return snapshots
      .filter((s, i) => i === 0 || 'prev_topic' in s || 'prev_stream' in s)
      .map(
        ({ prev_content: _c, prev_rendered_content: _r, content_html_diff: _d, ...rest }) => rest,
      );
  return snapshots;
}
