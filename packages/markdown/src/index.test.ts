import { mentionCandidates, renderMarkdown } from './index';

const html = (content: string, options = {}) => renderMarkdown(content, undefined, options).html;

describe('renderMarkdown', () => {
  it('escapes raw HTML instead of passing it through', () => {
    expect(html('<img src=x onerror=alert(1)> & <b>bold</b>')).toBe(
      '<p>&lt;img src=x onerror=alert(1)&gt; &amp; &lt;b&gt;bold&lt;/b&gt;</p>',
    );
  });

  it('turns single newlines into line breaks and keeps paragraphs apart', () => {
    expect(html('one\ntwo\n\nthree')).toBe('<p>one<br>\ntwo</p>\n<p>three</p>');
  });

  it('renders emphasis, strong and strikethrough, but not underscore emphasis', () => {
    expect(html('*soft* **loud** ~~gone~~ __plain__ _plain_')).toBe(
      '<p><em>soft</em> <strong>loud</strong> <del>gone</del> __plain__ _plain_</p>',
    );
  });

  it('links URLs and named links; a blank name shows the URL', () => {
    expect(
      html('see https://example.org and [docs](https://example.org/docs) [ ](https://a.b)'),
    ).toBe(
      '<p>see <a href="https://example.org">https://example.org</a> and <a href="https://example.org/docs">docs</a> <a href="https://a.b">https://a.b</a></p>',
    );
  });

  it('has no reference-style links or setext headings, only # headings', () => {
    expect(html('[a]\n\n[a]: https://x.y')).toBe(
      '<p>[a]</p>\n<p>[a]: <a href="https://x.y">https://x.y</a></p>',
    );
    expect(html('Title\n===')).toBe('<p>Title<br>\n===</p>');
    expect(html('## Part')).toBe('<h2>Part</h2>');
  });

  it('wraps code blocks in codehilite with the language name', () => {
    expect(html('```python\nprint(1)   \n```')).toBe(
      '<div class="codehilite" data-code-language="Python"><pre><span></span><code>print(1)\n</code></pre></div>',
    );
    expect(html('~~~\n<b>&</b>\n~~~')).toBe(
      '<div class="codehilite"><pre><span></span><code>&lt;b&gt;&amp;&lt;/b&gt;\n</code></pre></div>',
    );
    expect(html('`a <b>`')).toBe('<p><code>a &lt;b&gt;</code></p>');
  });

  it('renders quote fences and > quotes as block quotes with Markdown inside', () => {
    expect(html('```quote\n**said**\n```')).toBe(
      '<blockquote>\n<p><strong>said</strong></p>\n</blockquote>',
    );
    expect(html('> quoted')).toBe('<blockquote>\n<p>quoted</p>\n</blockquote>');
  });

  it('renders spoilers with their header', () => {
    expect(html('```spoiler Plot twist\nhidden\n```')).toBe(
      '<div class="spoiler-block"><div class="spoiler-header">\n<p>Plot twist</p>\n</div><div class="spoiler-content" aria-hidden="true">\n<p>hidden</p>\n</div></div>',
    );
  });

  it('renders lists and tables', () => {
    expect(html('intro:\n* a\n* b')).toBe('<p>intro:</p>\n<ul>\n<li>a</li>\n<li>b</li>\n</ul>');
    expect(html('| a | b |\n|---|---|\n| 1 | 2 |')).toContain('<td>1</td>');
  });

  it("renders emoji by name and from Unicode, with Zulip's names", () => {
    expect(html(':smile: 🤖 :no_such_emoji:')).toBe(
      '<p><span aria-label="smile" class="emoji emoji-1f642" role="img" title="smile">:smile:</span> ' +
        '<span aria-label="robot" class="emoji emoji-1f916" role="img" title="robot">:robot:</span> :no_such_emoji:</p>',
    );
    expect(html(':)')).toBe('<p>:)</p>');
    expect(html('hi :)', { translateEmoticons: true })).toContain('emoji-1f642');
  });

  it('renders global times, and says when it cannot read one', () => {
    expect(html('<time:2024-03-01T10:00:00Z>')).toBe(
      '<p><time datetime="2024-03-01T10:00:00Z">2024-03-01T10:00:00Z</time></p>',
    );
    expect(html('<time:1700000000>')).toContain('datetime="2023-11-14T22:13:20Z"');
    expect(html('<time:whenever>')).toBe(
      '<p><span class="timestamp-error">Invalid time format: whenever</span></p>',
    );
  });

  it("reads Zulip's time zone abbreviations", () => {
    expect(html('<time:31 Dec 2017 5:30 am IST>')).toContain('datetime="2017-12-31T00:00:00Z"');
    expect(html('<time:31 Dec 2017 5:30 am PST>')).toContain('datetime="2017-12-31T13:30:00Z"');
    expect(html('<time:Jun 5 2017 10:30 GMT>')).toContain('datetime="2017-06-05T10:30:00Z"');
  });

  it('typesets $$TeX$$ inline and in math fences, escaping what KaTeX refuses', () => {
    expect(html('$$x^2$$')).toContain('<span class="katex">');
    expect(html('```math\n\\frac{1}{2}\n```')).toContain('katex-display');
    expect(html('$$\\nosuchcommand{<b>}$$')).toBe(
      '<p><span class="tex-error">$$\\nosuchcommand{&lt;b&gt;}$$</span></p>',
    );
    expect(html('costs $5 and $$$')).toBe('<p>costs $5 and $$$</p>');
    // A fence's error is escaped as Django escapes (quotes too), an inline one as text.
    expect(html("```math\n\\x{'a'}\n```")).toBe(
      '<p><span class="tex-error">\\x{&#x27;a&#x27;}</span></p>',
    );
    expect(html("$$\\x{'a'}$$")).toBe('<p><span class="tex-error">$$\\x{\'a\'}$$</span></p>');
  });

  it('previews linked images after their paragraph', () => {
    expect(html('look https://x.org/cat.png')).toBe(
      '<p>look <a href="https://x.org/cat.png">https://x.org/cat.png</a></p>\n' +
        '<div class="message_inline_image"><a href="https://x.org/cat.png"><img data-src-fullsize="/thumbnail?url=https%3A%2F%2Fx.org%2Fcat.png&amp;size=full" src="/thumbnail?url=https%3A%2F%2Fx.org%2Fcat.png&amp;size=thumbnail"></a></div>',
    );
  });

  it('previews each image once, none in a quote, and a lone link gives way to its preview', () => {
    const cat = 'https://x.org/cat.png';
    const count = (text: string) => text.split('class="message_inline_image"').length - 1;
    expect(count(html(`${cat} and ${cat}`))).toBe(1);
    expect(count(html(`> look ${cat}`))).toBe(0);
    expect(count(html(`\`\`\`quote\nlook ${cat}\n\`\`\``))).toBe(0);
    expect(html(cat)).toMatch(/^<div class="message_inline_image">/);
    expect(html(`[](${cat})`)).toMatch(/^<div class="message_inline_image">/);
    expect(html(`[a cat](${cat})`)).toMatch(/^<p><a href/);
  });

  it('flags /me messages as Zulip does: "/me " and more', () => {
    expect(renderMarkdown('/me waves').isMeMessage).toBe(true);
    expect(renderMarkdown('/metoo').isMeMessage).toBe(false);
    expect(renderMarkdown('/me').isMeMessage).toBe(false);
  });
});

describe('block quotes', () => {
  it("take every line of their block, as Python-Markdown's", () => {
    expect(html('>\n>\ntext')).toBe('<blockquote>\n<p>text</p>\n</blockquote>');
    expect(html('> a\n>\ntext')).toBe('<blockquote>\n<p>a</p>\n<p>text</p>\n</blockquote>');
    expect(html('x\n> a\n>\nb')).toBe('<p>x</p>\n<blockquote>\n<p>a</p>\n<p>b</p>\n</blockquote>');
    // A heading or a rule ends it, as Zulip's processors for them run first.
    expect(html('> q\n# head\nmore')).toBe(
      '<blockquote>\n<p>q</p>\n</blockquote>\n<h1>head</h1>\n<p>more</p>',
    );
    // A blank line ends the quote.
    expect(html('> a\n\nb')).toBe('<blockquote>\n<p>a</p>\n</blockquote>\n<p>b</p>');
  });
});

describe('mentions', () => {
  const data = {
    usersByName: new Map([
      ['ada lovelace', [{ id: 7, fullName: 'Ada Lovelace' }]],
      [
        'sam',
        [
          { id: 8, fullName: 'Sam' },
          { id: 9, fullName: 'Sam' },
        ],
      ],
    ]),
    usersById: new Map([
      [7, { id: 7, fullName: 'Ada Lovelace' }],
      [9, { id: 9, fullName: 'Sam' }],
    ]),
    groupsByName: new Map([['support', { id: 3, name: 'support' }]]),
  };

  it('resolves user mentions by name or name|id, silently or not', () => {
    const result = renderMarkdown('@**ada lovelace** @_**Sam|9** @**Sam**', data);
    expect(result.html).toBe(
      '<p><span class="user-mention" data-user-id="7">@Ada Lovelace</span> ' +
        '<span class="user-mention silent" data-user-id="9">Sam</span> @<strong>Sam</strong></p>',
    );
    expect([...result.mentions.userIds]).toEqual([7]);
    expect([...result.mentions.silentUserIds]).toEqual([9]);
  });

  it('resolves wildcard and group mentions', () => {
    const result = renderMarkdown('@**everyone** @*support* @_*support*', data);
    expect(result.mentions.wildcard).toBe('channel');
    expect([...result.mentions.groupIds]).toEqual([3]);
    expect(renderMarkdown('@**topic**', data).mentions.wildcard).toBe('topic');
    expect(renderMarkdown('`@**all**`', data).mentions.wildcard).toBeNull();
  });

  it('links channels, topics and messages it knows, leaving others as typed', () => {
    const withChannels = {
      ...data,
      channelsByName: new Map([['dev team', { id: 5, name: 'Dev team' }]]),
    };
    expect(renderMarkdown('#**dev team** #**nowhere**', withChannels).html).toBe(
      '<p><a class="stream" data-stream-id="5" href="/#narrow/channel/5-Dev-team">#Dev team</a> #<strong>nowhere</strong></p>',
    );
    expect(renderMarkdown('#**Dev team>v1.0 plans**', withChannels).html).toBe(
      '<p><a class="stream-topic" data-stream-id="5" href="/#narrow/channel/5-Dev-team/topic/v1.2E0.20plans">#Dev team &gt; v1.0 plans</a></p>',
    );
    expect(renderMarkdown('#**Dev team>plans@42**', withChannels).html).toBe(
      '<p><a class="message-link" href="/#narrow/channel/5-Dev-team/topic/plans/near/42">#Dev team &gt; plans @ 💬</a></p>',
    );
    // Zulip's encode_hash_component is Python's quote(safe="*"): ! ' ( ) are encoded too.
    expect(renderMarkdown("#**Dev team>it's (nearly) done!**", withChannels).html).toContain(
      'href="/#narrow/channel/5-Dev-team/topic/it.27s.20.28nearly.29.20done.21"',
    );
  });

  it('lists the names and ids to look up before rendering', () => {
    expect(mentionCandidates('@**A B|12** @**C** @*grp* @**all**')).toEqual({
      names: new Set(['c']),
      ids: new Set([12]),
      groupNames: new Set(['grp']),
    });
  });
});

describe('custom emoji and uploads', () => {
  const data = () => ({
    usersByName: new Map(),
    usersById: new Map(),
    groupsByName: new Map(),
  });

  it('renders an organization’s emoji as an image, before a Unicode emoji of that name', () => {
    const realmEmoji = new Map([
      ['green_tick', { sourceUrl: '/user_avatars/2/emoji/images/7.png' }],
      ['smile', { sourceUrl: '/user_avatars/2/emoji/images/8.png' }],
    ]);
    expect(renderMarkdown(':green_tick: :smile:', { ...data(), realmEmoji }).html).toBe(
      '<p><img alt=":green_tick:" class="emoji" src="/user_avatars/2/emoji/images/7.png" ' +
        'title="green tick"> <img alt=":smile:" class="emoji" ' +
        'src="/user_avatars/2/emoji/images/8.png" title="smile"></p>',
    );
    expect(renderMarkdown(':green_tick:').html).toBe('<p>:green_tick:</p>');
    // An emoji image is not an image for has:image.
    expect(renderMarkdown(':green_tick:', { ...data(), realmEmoji }).hasImage).toBe(false);
    expect(renderMarkdown('https://example.com/cat.png').hasImage).toBe(true);
  });

  it('renders Zulip’s own :zulip: emoji', () => {
    expect(renderMarkdown(':zulip:').html).toBe(
      '<p><img alt=":zulip:" class="emoji" ' +
        'src="/static/generated/emoji/images/emoji/unicode/zulip.png" title="zulip"></p>',
    );
  });

  it('has no image syntax: "![x](url)" is "!" and a link, previewed like any image link', () => {
    const url = 'https://example.com/a.png';
    const { html } = renderMarkdown(`![x](${url})`);
    expect(
      html.startsWith(`<p>!<a href="${url}">x</a></p>\n<div class="message_inline_image">`),
    ).toBe(true);
    expect(html).not.toContain(`<img src="${url}"`);
  });

  it('previews a linked upload only when it is a known image', () => {
    const url = '/user_uploads/2/ab/abcdefghijklmnopqrstuvwx/cat.png';
    const uploads = new Map([
      ['2/ab/abcdefghijklmnopqrstuvwx/cat.png', { contentType: 'image/png', width: 4, height: 3 }],
    ]);
    // Zulip 9+: the loading placeholder while the thumbnail is being made.
    expect(renderMarkdown(`[cat.png](${url})`, { ...data(), uploads }).html).toBe(
      `<p><a href="${url}">cat.png</a></p>\n<div class="message_inline_image">` +
        `<a href="${url}" title="cat.png"><img class="image-loading-placeholder" ` +
        `data-original-content-type="image/png" data-original-dimensions="4x3" ` +
        `src="/static/images/loading/loader-black.svg"></a></div>`,
    );
    expect(renderMarkdown(`[cat.png](${url})`).html).toBe(`<p><a href="${url}">cat.png</a></p>`);
  });

  it('shows an upload’s thumbnail once made, marking animated ones', () => {
    const url = '/user_uploads/2/ab/abcdefghijklmnopqrstuvwx/cat.gif';
    const thumbnail = '/user_uploads/thumbnail/2/ab/abcdefghijklmnopqrstuvwx/cat.gif/840x560';
    const image = { contentType: 'image/gif', width: 128, height: 56 };
    const still = new Map([
      [url.slice(14), { ...image, thumbnail: { url: `${thumbnail}.webp`, animated: false } }],
    ]);
    expect(renderMarkdown(`[cat](${url})`, { ...data(), uploads: still }).html).toBe(
      `<p><a href="${url}">cat</a></p>\n<div class="message_inline_image">` +
        `<a href="${url}" title="cat"><img data-original-content-type="image/gif" ` +
        `data-original-dimensions="128x56" src="${thumbnail}.webp"></a></div>`,
    );
    const animated = new Map([
      [url.slice(14), { ...image, thumbnail: { url: `${thumbnail}-anim.webp`, animated: true } }],
    ]);
    expect(renderMarkdown(`[cat](${url})`, { ...data(), uploads: animated }).html).toContain(
      `<img data-animated="true" data-original-content-type="image/gif" ` +
        `data-original-dimensions="128x56" src="${thumbnail}-anim.webp">`,
    );
  });
});

describe('bounded work', () => {
  it('renders a long run of bare quote lines in linear time', () => {
    const html = renderMarkdown(`a\n${'>\n'.repeat(4999)}`).html;
    expect(html.startsWith('<p>a<br>\n&gt;<br>')).toBe(true);
  });

  it('stops nesting quote fences after a fixed depth', () => {
    const depth = 40;
    const content = `${'```quote\n'.repeat(depth)}deep\n${'```\n'.repeat(depth)}`;
    const html = renderMarkdown(content).html;
    expect(html.match(/<blockquote>/g)!.length).toBeLessThan(20);
    expect(html).toContain('<div class="codehilite">');
  });
});

describe("the organization's rendering settings", () => {
  it('gives fences without a language the default code block language, except in spoilers', () => {
    const options = { defaultCodeBlockLanguage: 'Python' };
    expect(html('```\nx = 1\n```', options)).toBe(html('```python\nx = 1\n```'));
    // A fence's own language wins.
    expect(html('```js\nx\n```', options)).toBe(html('```js\nx\n```'));
    // Inside a quote the default applies, inside a spoiler it does not (Zulip's handlers).
    expect(html('````quote\n```\nx\n```\n````', options)).toBe(
      html('````quote\n```python\nx\n```\n````'),
    );
    expect(html('````spoiler s\n```\nx\n```\n````', options)).toBe(
      html('````spoiler s\n```\nx\n```\n````'),
    );
    // An indented code block is no fence.
    expect(html('    x', options)).toBe(html('    x'));
    // The default may itself be a special fence, whose inside then nests.
    expect(html('```\n**hi**\n```', { defaultCodeBlockLanguage: 'quote' })).toBe(
      '<blockquote>\n<p><strong>hi</strong></p>\n</blockquote>',
    );
    expect(html('```\nx\n```', { defaultCodeBlockLanguage: '' })).toBe(html('```\nx\n```'));
  });

  it("makes links to the organization's narrows and uploads relative, as Zulip", () => {
    const options = { realmUrl: 'https://chat.example.com' };
    expect(html('[here](https://chat.example.com/#narrow/channel/3-general)', options)).toBe(
      '<p><a href="#narrow/channel/3-general">here</a></p>',
    );
    // A bare link keeps its text.
    expect(html('https://chat.example.com/#narrow/dm/4-x', options)).toBe(
      '<p><a href="#narrow/dm/4-x">https://chat.example.com/#narrow/dm/4-x</a></p>',
    );
    expect(html('[f](https://chat.example.com/user_uploads/2/ab/c/f.txt)', options)).toBe(
      '<p><a href="user_uploads/2/ab/c/f.txt">f</a></p>',
    );
    // Other paths and other hosts stay absolute.
    for (const url of [
      'https://chat.example.com/https://example.com',
      'https://chat.example.com.evil/#narrow',
      'https://other.example.com/#narrow',
    ])
      expect(html(`[x](${url})`, options)).toBe(`<p><a href="${url}">x</a></p>`);
  });

  it('previews an upload linked by its full URL as an upload', () => {
    const pathId = '2/ab/abcdefghijklmnopqrstuvwx/cat.png';
    const uploads = new Map([[pathId, { contentType: 'image/png', width: 4, height: 3 }]]);
    const data = { usersByName: new Map(), usersById: new Map(), groupsByName: new Map(), uploads };
    const rendered = renderMarkdown(
      `[cat](https://chat.example.com/user_uploads/${pathId})`,
      data,
      {
        realmUrl: 'https://chat.example.com',
      },
    ).html;
    expect(rendered).toContain(
      `<a href="user_uploads/${pathId}" title="cat"><img class="image-loading-placeholder"`,
    );
  });

  it('shows no image previews when the organization turned them off', () => {
    const url = 'https://example.com/cat.png';
    expect(html(url)).toContain('message_inline_image');
    const off = renderMarkdown(url, undefined, { imagePreviews: false });
    expect(off.html).toBe(`<p><a href="${url}">${url}</a></p>`);
    expect(off.hasImage).toBe(false);
  });
});
