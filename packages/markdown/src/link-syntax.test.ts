import {
  channelLinkSyntax,
  channelMessageUrl,
  messageLinkSyntax,
  silentMentionSyntax,
  topicLinkSyntax,
} from './link-syntax';

describe('the syntax of links the server writes', () => {
  it('names a user silently', () => {
    expect(silentMentionSyntax({ id: 7, fullName: 'Iago Smith' })).toBe('@_**Iago Smith|7**');
  });

  it('links topics and messages in Zulip syntax where the names allow it', () => {
    expect(channelLinkSyntax(3, 'Dev team')).toBe('#**Dev team**');
    expect(topicLinkSyntax(3, 'Dev team', 'plans')).toBe('#**Dev team>plans**');
    expect(messageLinkSyntax(3, 'Dev team', 'plans', 42)).toBe('#**Dev team>plans@42**');
  });

  it('falls back to a plain link, escaped, where a name would break the syntax', () => {
    expect(channelLinkSyntax(3, 'Sw*den')).toBe('[#Sw&#42;den](#narrow/channel/3-Sw*den)');
    expect(topicLinkSyntax(3, 'Dev team', 'a > b')).toBe(
      '[#Dev team > a &gt; b](#narrow/channel/3-Dev-team/topic/a.20.3E.20b)',
    );
    expect(messageLinkSyntax(3, 'R&D', '*x*', 9)).toBe(
      '[#R&amp;D > &#42;x&#42; @ 💬](#narrow/channel/3-R.26D/topic/*x*/near/9)',
    );
    expect(topicLinkSyntax(3, 'costs $$', '')).toBe(
      '[#costs &#36;&#36; > general chat](#narrow/channel/3-costs-.24.24/topic/)',
    );
  });

  it("gives a channel message's address in the web app", () => {
    expect(
      channelMessageUrl('https://chat.example.com', {
        id: 12,
        channelId: 3,
        channelName: 'Dev team',
        topic: 'v1.0 (beta)',
      }),
    ).toBe('https://chat.example.com/#narrow/channel/3-Dev-team/topic/v1.2E0.20.28beta.29/near/12');
  });
});
