import { checkSubmessageContent, widgetOf, widgetTypeOf } from './widgets';

describe('widgetOf (Zulip get_widget_data)', () => {
  it('leaves ordinary messages alone', () => {
    for (const content of [
      '',
      '     ',
      'this is an ordinary message',
      '/bogus_command',
      '/me shrugs',
      'use /poll',
      '/polls are fun',
      ' /poll leading space',
      '/Poll capitalised',
    ])
      expect(widgetOf(content)).toBeNull();
  });

  it('reads a poll: the question on the first line, an option per later non-blank line', () => {
    expect(widgetOf('/poll')).toEqual({
      widget_type: 'poll',
      extra_data: { question: '', options: [] },
    });
    expect(
      widgetOf('/poll What is your favorite color?\n\nRed\nGreen  \n\n   Blue\n - Yellow\n* Pink'),
    ).toEqual({
      widget_type: 'poll',
      extra_data: {
        question: 'What is your favorite color?',
        options: ['Red', 'Green', 'Blue', 'Yellow', 'Pink'],
      },
    });
    // The first token ends at any whitespace, a newline too; CRLF lines are lines.
    expect(widgetOf('/poll\r\nyes\r\nno')).toEqual({
      widget_type: 'poll',
      extra_data: { question: '', options: ['yes', 'no'] },
    });
  });

  it('reads a todo list: the title, then tasks with a description after the first ": "', () => {
    expect(widgetOf('/todo')).toEqual({
      widget_type: 'todo',
      extra_data: { task_list_title: '', tasks: [] },
    });
    expect(widgetOf('/todo   School Work')).toEqual({
      widget_type: 'todo',
      extra_data: { task_list_title: 'School Work', tasks: [] },
    });
    expect(widgetOf('/todo\nTask')).toEqual({
      widget_type: 'todo',
      extra_data: { task_list_title: '', tasks: [{ task: 'Task', desc: '' }] },
    });
    expect(
      widgetOf(
        '/todo Title\n\n    task without description\ntask: with description    \n\n - task as list : also: with colons',
      ),
    ).toEqual({
      widget_type: 'todo',
      extra_data: {
        task_list_title: 'Title',
        tasks: [
          { task: 'task without description', desc: '' },
          { task: 'task', desc: 'with description' },
          { task: 'task as list', desc: 'also: with colons' },
        ],
      },
    });
    // A colon without a space after it is part of the task.
    expect(widgetOf('/todo\nread 10:30 slides')).toEqual({
      widget_type: 'todo',
      extra_data: { task_list_title: '', tasks: [{ task: 'read 10:30 slides', desc: '' }] },
    });
  });
});

describe('checkSubmessageContent (Zulip validate_poll_data / validate_todo_data)', () => {
  const refused = (content: string, type: string | null, msg: string, isAuthor = true) =>
    expect(() => checkSubmessageContent(content, type, isAuthor)).toThrow(msg);
  const accepted = (data: unknown, type: string | null, isAuthor = true) =>
    expect(() => checkSubmessageContent(JSON.stringify(data), type, isAuthor)).not.toThrow();

  it('needs JSON, and for a poll its shapes', () => {
    refused('bogus', null, 'Invalid json for submessage');
    refused('bogus', 'poll', 'Invalid json for submessage');
    accepted('anything at all', null);
    refused('""', 'poll', 'poll data is not a dict');
    refused('[]', 'poll', 'poll data is not a dict');
    refused('{}', 'poll', 'type key is missing from poll data');
    refused('{"type": "bogus"}', 'poll', 'Unknown type for poll data: bogus');
    refused('{"type": "vote"}', 'poll', 'key key is missing from poll data');
    refused('{"type": "vote", "key": "1,1,", "vote": 99}', 'poll', 'Invalid poll data["vote"]');
    refused('{"type": "vote", "key": "1,1", "vote": 1, "x": 2}', 'poll', 'Unexpected arguments: x');
    refused('{"type": "question"}', 'poll', 'question key is missing from poll data');
    refused('{"type": "question", "question": 7}', 'poll', 'poll data["question"] is not a string');
    refused('{"type": "new_option", "idx": 7, "option": 999}', 'poll', 'is not a string');
    refused('{"type": "new_option", "idx": -1, "option": "pizza"}', 'poll', 'is too small');
    refused('{"type": "new_option", "idx": 1001, "option": "pizza"}', 'poll', 'is too large');
    refused('{"type": "new_option", "idx": "bogus", "option": "m"}', 'poll', 'is not an integer');
    accepted({ type: 'vote', key: '1,1', vote: 1 }, 'poll');
    accepted({ type: 'vote', key: '1,1', vote: -1 }, 'poll', false);
    accepted({ type: 'new_option', idx: 7, option: 'maybe' }, 'poll', false);
    accepted({ type: 'question', question: "what's for dinner?" }, 'poll');
    refused(
      '{"type": "question", "question": "mine now"}',
      'poll',
      "You can't edit a question unless you are the author.",
      false,
    );
  });

  it('checks a todo list the same way', () => {
    refused('{"type": "bogus"}', 'todo', 'Unknown type for todo data: bogus');
    refused('{"type": "new_task"}', 'todo', 'key key is missing from todo data');
    refused(
      '{"type": "new_task", "key": 7, "task": 7, "desc": "", "completed": false}',
      'todo',
      'todo data["task"] is not a string',
    );
    refused(
      '{"type": "new_task", "key": -1, "task": "eat", "desc": "", "completed": false}',
      'todo',
      'todo data["key"] is too small',
    );
    refused(
      '{"type": "new_task", "key": 1, "task": "eat", "desc": "", "completed": "no"}',
      'todo',
      'todo data["completed"] is not a boolean',
    );
    refused('{"type": "strike", "key": 999}', 'todo', 'todo data["key"] is not a string');
    accepted({ type: 'new_task', key: 7, task: 'eat', desc: '', completed: false }, 'todo', false);
    accepted({ type: 'strike', key: '5,9' }, 'todo', false);
    accepted({ type: 'new_task_list_title', title: 'Chores' }, 'todo');
    refused(
      '{"type": "new_task_list_title", "title": "Mine"}',
      'todo',
      "You can't edit the task list title unless you are the author.",
      false,
    );
  });

  it('reads the widget type from the first widget submessage', () => {
    expect(widgetTypeOf(null)).toBeNull();
    expect(widgetTypeOf('{"widget_type": "poll", "extra_data": {}}')).toBe('poll');
    expect(widgetTypeOf('bogus non-json')).toBeNull();
    expect(widgetTypeOf('{"bogus": 1}')).toBeNull();
    expect(widgetTypeOf('{"widget_type": "todo"}')).toBe('todo');
  });
});
