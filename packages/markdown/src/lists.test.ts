import { separateHangingLists } from './hanging-lists';
import { renderMarkdown } from './index';

const html = (content: string) => renderMarkdown(content).html;

describe('lists', () => {
  it('nests a sub-list indented by two spaces, and a sub-sub-list by four', () => {
    expect(html('- fruit\n  - pear\n    - conference\n- bread')).toBe(
      '<ul>\n<li>fruit<ul>\n<li>pear<ul>\n<li>conference</li>\n</ul>\n</li>\n</ul>\n</li>\n' +
        '<li>bread</li>\n</ul>',
    );
  });

  it('nests under a numbered item with two spaces too, whatever the marker width', () => {
    expect(html('1. wake\n2. eat\n  1. toast\n3. work')).toBe(
      '<ol>\n<li>wake</li>\n<li>eat<ol>\n<li>toast</li>\n</ol>\n</li>\n<li>work</li>\n</ol>',
    );
  });

  it('numbers a list from its first item and ignores the later numbers', () => {
    expect(html('4. d\n4. e\n9. f')).toBe(
      '<ol start="4">\n<li>d</li>\n<li>e</li>\n<li>f</li>\n</ol>',
    );
    expect(html('1. one\n7. two\n  5. inner')).toBe(
      '<ol>\n<li>one</li>\n<li>two<ol start="5">\n<li>inner</li>\n</ol>\n</li>\n</ol>',
    );
  });

  it('keeps one list across bullet characters but not across list kinds', () => {
    expect(html('* a\n- b\n+ c')).toBe('<ul>\n<li>a</li>\n<li>b</li>\n<li>c</li>\n</ul>');
    expect(html('* a\n1. b')).toBe('<ul>\n<li>a</li>\n</ul>\n<ol>\n<li>b</li>\n</ol>');
  });

  it('accepts only "N." numbering and needs a space after the marker', () => {
    expect(html('1) not a list')).toBe('<p>1) not a list</p>');
    expect(html('*')).toBe('<p>*</p>');
  });

  it('keeps the indentation of an item continuation line', () => {
    expect(html('* first line\n  second line')).toBe(
      '<ul>\n<li>first line<br>\n  second line</li>\n</ul>',
    );
  });

  it('treats a deeper-indented marker line as text of the item', () => {
    expect(html('* a\n  * b\n      * c')).toBe(
      '<ul>\n<li>a<ul>\n<li>b<br>\n    * c</li>\n</ul>\n</li>\n</ul>',
    );
  });

  it('lets a list hang off a paragraph, starting at any one-digit number', () => {
    expect(html('Shopping:\n3. milk')).toBe(
      '<p>Shopping:</p>\n<ol start="3">\n<li>milk</li>\n</ol>',
    );
  });

  it('does not start a list inside a quoted paragraph', () => {
    expect(html('> said\n> * not an item')).toBe(
      '<blockquote>\n<p>said<br>\n* not an item</p>\n</blockquote>',
    );
  });

  it('makes only the items next to a blank line loose', () => {
    expect(html('* a\n* b\n\n* c\n* d')).toBe(
      '<ul>\n<li>a</li>\n<li>\n<p>b</p>\n</li>\n<li>\n<p>c</p>\n</li>\n<li>d</li>\n</ul>',
    );
    expect(html('* a\n\n  more about a\n* b')).toBe(
      '<ul>\n<li>\n<p>a</p>\n<p>more about a</p>\n</li>\n<li>\n<p>b</p>\n</li>\n</ul>',
    );
  });
});

describe('separateHangingLists', () => {
  it('puts a blank line between text and a list line, and between list kinds', () => {
    expect(separateHangingLists('text\n* a\n* b\n1. c')).toBe('text\n\n* a\n* b\n\n1. c');
  });

  it('leaves code fences alone but looks into quote fences', () => {
    expect(separateHangingLists('```\ntext\n* a\n```')).toBe('```\ntext\n* a\n```');
    expect(separateHangingLists('```quote\ntext\n* a\n```')).toBe('```quote\ntext\n\n* a\n```');
  });
});
