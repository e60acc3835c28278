// Small shared pieces: state badges, the error box, the confirmation dialog,
// the timing line and number formatting.
import { useEffect, useRef } from 'preact/hooks';

export function StateBadge({ state }) {
  return <span class={`state state-${state}`} data-state={state}>{state}</span>;
}

// An API error shown with its message, code and HTTP status.
export function ErrorBox({ error, onClose }) {
  if (!error) return null;
  return (
    <div class="error" role="alert" data-testid="error">
      <strong>{error.message}</strong>
      {error.code && <code class="error-code">{error.code}</code>}
      {error.status ? <span class="muted"> HTTP {error.status}</span> : null}
      {onClose && (
        <button type="button" class="link" onClick={onClose} aria-label="Dismiss error">
          ×
        </button>
      )}
    </div>
  );
}

// A modal <dialog>: focus goes to Cancel, Escape cancels.
export function ConfirmDialog({ open, title, children, confirmLabel, onConfirm, onCancel }) {
  const ref = useRef(null);
  useEffect(() => {
    const d = ref.current;
    if (!d) return;
    if (open && !d.open) d.showModal();
    if (!open && d.open) d.close();
  }, [open]);
  return (
    <dialog ref={ref} class="confirm" onCancel={(e) => { e.preventDefault(); onCancel(); }}
      aria-labelledby="confirm-title">
      <h2 id="confirm-title">{title}</h2>
      <div>{children}</div>
      <div class="row end">
        <button type="button" autofocus onClick={onCancel}>Cancel</button>
        <button type="button" class="danger" data-testid="confirm" onClick={onConfirm}>
          {confirmLabel}
        </button>
      </div>
    </dialog>
  );
}

export function fmtMs(ms) {
  if (ms == null) return '–';
  return ms < 10 ? `${ms.toFixed(1)} ms` : `${Math.round(ms)} ms`;
}

export function fmtBytes(n) {
  if (n == null) return '–';
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(1)} MiB`;
}

export function fmtInt(n) {
  return n == null ? '–' : Number(n).toLocaleString('en-US');
}

export function Timing({ timing, rows }) {
  if (!timing) return null;
  return (
    <p class="timing" data-testid="timing">
      <span>first byte <b>{fmtMs(timing.ttfb)}</b></span>
      <span>total <b>{fmtMs(timing.total)}</b></span>
      <span><b>{fmtBytes(timing.bytes)}</b></span>
      <span><b data-testid="row-count">{fmtInt(rows)}</b> {rows === 1 ? 'row' : 'rows'}</span>
    </p>
  );
}

// Saves a Blob under a file name (an object URL clicked by a hidden link).
export function saveBlob(blob, name) {
  const url = URL.createObjectURL(blob);
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
}
