// Channel, topic and message links: #**channel**, #**channel>topic** and
// #**channel>topic@message id**, linking to the web app's narrow for them. Channels are
// resolved from the caller's MentionData; unknown names stay as typed.
import type { MarkdownIt, StateInline } from 'markdown-it';
import type { MentionData } from './mentions';
import { escapeHtml as escape } from './escape';
import { encodeChannel, encodeHashComponent } from './link-syntax';

export function channelLinkCandidates(content: string): Set<string> {
  const names = new Set<string>();
  for (const match of content.matchAll(/#\*\*([^*>]+)(?:>[^*]*)?\*\*/g))
    names.add(match[1]!.toLowerCase());
  return names;
}

export function channelLinkPlugin(md: MarkdownIt): void {
  md.inline.ruler.before('emphasis', 'zulip_channel_link', (state: StateInline, silent) => {
    if (!state.src.startsWith('#**', state.pos)) return false;
    const match = /^#\*\*([^*>]+)(?:>([^*]*?))?\*\*/.exec(state.src.slice(state.pos));
    if (!match) return false;
    const data = (state.env as { mentionData?: MentionData }).mentionData;
    const channel = data?.channelsByName?.get(match[1]!.toLowerCase());
    if (!channel) return false;
    if (!silent) {
      const base = `/#narrow/channel/${encodeChannel(channel.id, channel.name)}`;
      const token = state.push('html_inline', '', 0);
      const topicPart = match[2];
      if (topicPart === undefined) {
        token.content = `<a class="stream" data-stream-id="${channel.id}" href="${base}">#${escape(channel.name)}</a>`;
      } else {
        const near = /^(.*)@(\d+)$/.exec(topicPart);
        const topic = near ? near[1]! : topicPart;
        const href = `${base}/topic/${encodeHashComponent(topic)}`;
        token.content = near
          ? `<a class="message-link" href="${href}/near/${near[2]}">#${escape(channel.name)} &gt; ${escape(topic)} @ 💬</a>`
          : `<a class="stream-topic" data-stream-id="${channel.id}" href="${href}">#${escape(channel.name)} &gt; ${escape(topic)}</a>`;
      }
    }
    state.pos += match[0].length;
    return true;
  });
}
