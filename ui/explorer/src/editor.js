// The SQL editor (CodeMirror 6), loaded with the SQL tab: DuckDB SQL with
// completion of dataset names (as tables), their columns, and the functions
// the server allows; Ctrl/Cmd+Enter runs.
import { basicSetup } from 'codemirror';
import { EditorView, keymap } from '@codemirror/view';
import { EditorState, EditorSelection } from '@codemirror/state';
import { PostgreSQL, sql } from '@codemirror/lang-sql';
import { completeFromList } from '@codemirror/autocomplete';

// Functions people reach for (all on the server's allowlist).
const FUNCTIONS = [
  'count', 'sum', 'avg', 'min', 'max', 'median', 'quantile_cont', 'quantile_disc', 'stddev_samp',
  'approx_count_distinct', 'count_if', 'any_value', 'arg_max', 'arg_min', 'string_agg', 'list',
  'date_trunc', 'date_part', 'time_bucket', 'strftime', 'strptime', 'epoch', 'now', 'current_date',
  'extract', 'year', 'month', 'day', 'hour', 'dayofweek', 'coalesce', 'nullif', 'greatest', 'least',
  'round', 'floor', 'ceil', 'abs', 'ln', 'log10', 'sqrt', 'power', 'lower', 'upper', 'trim',
  'length', 'substring', 'replace', 'concat', 'split_part', 'regexp_matches', 'regexp_replace',
  'regexp_extract', 'starts_with', 'ends_with', 'contains', 'cast', 'try_cast', 'row_number',
  'rank', 'dense_rank', 'lag', 'lead', 'first_value', 'last_value', 'ntile', 'percent_rank',
].map((f) => ({ label: f, type: 'function', apply: `${f}(` }));

export function createEditor(parent, { doc, schema, onRun, onChange, label }) {
  const view = new EditorView({
    parent,
    state: EditorState.create({
      doc,
      extensions: [
        keymap.of([{ key: 'Mod-Enter', run: () => { onRun(); return true; } }]),
        basicSetup,
        sql({ dialect: PostgreSQL, schema, upperCaseKeywords: true }),
        PostgreSQL.language.data.of({ autocomplete: completeFromList(FUNCTIONS) }),
        EditorView.lineWrapping,
        EditorView.contentAttributes.of({ 'data-testid': 'sql-text', 'aria-label': label,
          // how many datasets completion knows (0 until their schemas came)
          'data-tables': String(Object.keys(schema || {}).length) }),
        EditorView.updateListener.of((u) => { if (u.docChanged) onChange(u.state.doc.toString()); }),
      ],
    }),
  });
  return {
    view,
    get: () => view.state.doc.toString(),
    set: (text) => view.dispatch({ changes: { from: 0, to: view.state.doc.length, insert: text } }),
    // Puts the cursor on (line, column) (1-based) and selects `len` characters.
    mark: (line, column, len) => {
      const d = view.state.doc;
      if (line < 1 || line > d.lines) return;
      const l = d.line(line);
      const from = Math.min(l.from + Math.max(0, column - 1), l.to);
      const to = Math.min(from + Math.max(1, len || 1), l.to);
      view.dispatch({ selection: EditorSelection.single(from, to), scrollIntoView: true });
      view.focus();
    },
    destroy: () => view.destroy(),
  };
}
