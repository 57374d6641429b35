import { emptyMentionData, renderMarkdown } from './index';
import {
  linkifierErrors,
  fillReverseTemplate,
  matchWhole,
  topicLinks,
  type Linkifier,
} from './linkifiers';

const tickets: Linkifier = {
  pattern: '#(?P<id>[0-9]+)',
  urlTemplate: 'https://tracker.example/ticket/{id}',
};
const repos: Linkifier = {
  pattern: '(?P<org>[a-z]+)/(?P<repo>[a-z]+)#(?P<id>[0-9]+)',
  urlTemplate: 'https://code.example/{org}/{repo}/issues/{id}',
};

function render(content: string, linkifiers: Linkifier[]): string {
  return renderMarkdown(content, { ...emptyMentionData(), linkifiers }).html;
}

describe('linkifiers in messages', () => {
  it('links each match with the expanded template and keeps the typed text', () => {
    expect(render('see #12 and #345.', [tickets])).toBe(
      '<p>see <a href="https://tracker.example/ticket/12">#12</a> and ' +
        '<a href="https://tracker.example/ticket/345">#345</a>.</p>',
    );
  });

  it('needs a boundary before and after the match', () => {
    expect(render('issue#12 and #12abc', [tickets])).toBe('<p>issue#12 and #12abc</p>');
    expect(render('(#7), "#8"', [tickets])).toContain('ticket/7');
    expect(render('(#7), "#8"', [tickets])).toContain('ticket/8');
  });

  it('leaves code, existing links and other linkifiers’ matches alone', () => {
    expect(render('`#12` [#13](https://x.example)', [tickets])).toBe(
      '<p><code>#12</code> <a href="https://x.example">#13</a></p>',
    );
    // The first linkifier in the order takes the text.
    expect(render('zulip/server#9', [repos, tickets])).toBe(
      '<p><a href="https://code.example/zulip/server/issues/9">zulip/server#9</a></p>',
    );
  });

  it('percent-encodes matched values and refuses dangerous expansions', () => {
    const search: Linkifier = {
      pattern: 'find:(?P<q>\\S+)',
      urlTemplate: 'https://s.example/?q={q}',
    };
    expect(render('find:a&b', [search])).toContain('href="https://s.example/?q=a%26b"');
    const raw: Linkifier = { pattern: 'go:(?P<target>\\S+)', urlTemplate: '{+target}' };
    expect(render('go:javascript:alert(1)', [raw])).not.toContain('<a');
    // Browsers drop tabs inside URLs: "java\tscript:" must not become a javascript: link.
    const tabbed: Linkifier = { ...tickets, urlTemplate: 'java\tscript:alert({id})' };
    expect(render('#5', [tabbed])).not.toContain('javascript');
    expect(render('#5', [tabbed])).not.toMatch(/href="java\s/);
    expect(topicLinks('#5', [{ ...tickets, urlTemplate: 'javascript:alert({id})' }])).toEqual([]);
  });

  it('renders nothing special without linkifiers', () => {
    expect(render('#12', [])).toBe('<p>#12</p>');
  });
});

describe('topicLinks', () => {
  it('lists linkifier matches and plain URLs in topic order', () => {
    expect(topicLinks('fix #4 per zulip.com/spec and #5', [tickets])).toEqual([
      { text: '#4', url: 'https://tracker.example/ticket/4' },
      { text: 'zulip.com/spec', url: 'https://zulip.com/spec' },
      { text: '#5', url: 'https://tracker.example/ticket/5' },
    ]);
  });

  it('lets earlier linkifiers win overlapping matches', () => {
    const mirror: Linkifier = { ...tickets, urlTemplate: 'https://mirror.example/{id}' };
    expect(topicLinks('#9', [tickets, mirror])).toEqual([
      { text: '#9', url: 'https://tracker.example/ticket/9' },
    ]);
    expect(topicLinks('#9', [mirror, tickets])).toEqual([
      { text: '#9', url: 'https://mirror.example/9' },
    ]);
  });

  it('is empty for a plain topic', () => {
    expect(topicLinks('lunch plans', [tickets])).toEqual([]);
    expect(topicLinks('', [tickets])).toEqual([]);
  });
});

describe('linkifierErrors', () => {
  it('accepts a pattern whose groups are exactly the template’s variables', () => {
    expect(linkifierErrors(repos.pattern, repos.urlTemplate)).toBeNull();
    expect(linkifierErrors('PR (?P<id>[0-9]+)', 'https://x.example/{?id}')).toBeNull();
  });

  it('explains what is wrong as Django’s message_dict, in Zulip’s words', () => {
    expect(linkifierErrors('', 'https://x.example')).toEqual({
      pattern: ['This field cannot be blank.'],
    });
    expect(linkifierErrors('(foo', 'https://x.example')).toEqual({
      __all__: ['Bad regular expression: missing ): (foo'],
    });
    expect(linkifierErrors('#(?P<id>[0-9]+)', '{id')).toEqual({
      url_template: ['Invalid URL template.'],
    });
    expect(linkifierErrors('#(?P<id>[0-9]+)', 'java\tscript:{id}')).toEqual({
      url_template: ['Invalid URL template.'],
    });
    expect(linkifierErrors('#(?P<id>[0-9]+)', 'https://x.example/{hello}')).toEqual({
      __all__: ["Group 'hello' in URL template is not present in linkifier pattern."],
    });
    expect(linkifierErrors('#(?P<id>[0-9]+)', 'https://x.example/')).toEqual({
      __all__: ["Group 'id' in linkifier pattern is not present in URL template."],
    });
  });

  it('reports every field, the fields first, as full_clean does', () => {
    // The field's own validator speaks first (the error's msg), the model's check after it.
    expect(linkifierErrors('(foo', '{id')).toEqual({
      url_template: ['Invalid URL template.'],
      __all__: ['Bad regular expression: missing ): (foo'],
    });
    expect(linkifierErrors('', '')).toEqual({
      pattern: ['This field cannot be blank.'],
      url_template: ['This field cannot be blank.'],
    });
    expect(linkifierErrors('#(?P<id>[0-9]+)', '')).toEqual({
      url_template: ['This field cannot be blank.'],
      __all__: ["Group 'id' in linkifier pattern is not present in URL template."],
    });
  });
});

describe('reverse templates', () => {
  it('fills {name} from the groups and keeps doubled braces literal', () => {
    const values = matchWhole(repos.pattern, 'zulip/server#9');
    expect(values).toEqual({ org: 'zulip', repo: 'server', id: '9' });
    expect(fillReverseTemplate('{org}/{repo}#{id}', values!)).toBe('zulip/server#9');
    expect(fillReverseTemplate('{{{id}}}', { id: '1' })).toBe('{1}');
    expect(fillReverseTemplate('{nope}', { id: '1' })).toBeNull();
    expect(matchWhole(tickets.pattern, 'x#1')).toBeNull();
  });
});
