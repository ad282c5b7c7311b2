import { useState, type FormEvent } from 'react';
import { useNavigate } from '@tanstack/react-router';
import { useQueryClient } from '@tanstack/react-query';
import { apiCall, type KeyInfo } from '../lib/api';
import { auth, useAuth } from '../lib/auth';
import { safeRedirect } from '../lib/search';

/** Sign-in with an API key: checked with GET /keys/me, then kept in localStorage. */
export function SignInPage({ redirect }: { redirect?: string }) {
  const { notice } = useAuth();
  const navigate = useNavigate();
  const queryClient = useQueryClient();
  const [key, setKey] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  async function submit(e: FormEvent<HTMLFormElement>) {
    e.preventDefault();
    const k = key.trim();
    if (!k) {
      setError('enter an API key');
      return;
    }
    setBusy(true);
    setError(null);
    try {
      const me = await apiCall<KeyInfo>(k, '/keys/me');
      queryClient.clear();
      queryClient.setQueryData(['me', k], me);
      auth.signIn(k);
      setKey('');
      // href, not to: the page asked for may carry its search (e.g. /data?line=feed)
      await navigate({ href: safeRedirect(redirect) });
    } catch (err) {
      setError(err instanceof Error ? err.message : String(err));
    } finally {
      setBusy(false);
    }
  }

  const shown = error ?? notice;
  return (
    <main className="signin" id="main">
      <h1>Sign in to Abacus</h1>
      <form onSubmit={submit} noValidate aria-describedby="signin-help">
        <label htmlFor="api-key">API key</label>
        <input
          id="api-key"
          name="apiKey"
          type="password"
          autoComplete="off"
          spellCheck={false}
          placeholder="abk_…"
          value={key}
          onChange={(e) => setKey(e.target.value)}
          aria-invalid={shown ? true : undefined}
          aria-errormessage={shown ? 'signin-error' : undefined}
          required
        />
        <button type="submit" disabled={busy}>
          {busy ? 'Signing in…' : 'Sign in'}
        </button>
        {shown ? (
          <p className="notice notice-error" id="signin-error" role="alert">
            {shown}
          </p>
        ) : null}
      </form>
      <p id="signin-help" className="muted">
        Get a key from an admin (<code>abacus keys create</code>), or run <code>abacus keys bootstrap</code> on a fresh install.
        The key stays in this browser (localStorage) and is sent only to this server, as <code>Authorization: Bearer</code>.
      </p>
    </main>
  );
}
