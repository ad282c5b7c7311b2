import { useSyncExternalStore } from 'react';

/** Where the API key lives: this browser's localStorage (the same entry the earlier page used). */
export const KEY_STORAGE = 'abacus.apiKey';

interface AuthState {
  key: string | null;
  /** why the user was signed out (e.g. the api's 401 message), shown on the sign-in form */
  notice: string | null;
}

const listeners = new Set<() => void>();
let state: AuthState = { key: readKey(), notice: null };

function readKey(): string | null {
  try {
    return window.localStorage.getItem(KEY_STORAGE);
  } catch {
    return null;
  }
}

function set(next: AuthState): void {
  state = next;
  for (const l of listeners) l();
}

export const auth = {
  get: (): AuthState => state,
  signIn(key: string): void {
    window.localStorage.setItem(KEY_STORAGE, key);
    set({ key, notice: null });
  },
  signOut(notice: string | null = null): void {
    window.localStorage.removeItem(KEY_STORAGE);
    set({ key: null, notice });
  },
  subscribe(l: () => void): () => void {
    listeners.add(l);
    return () => listeners.delete(l);
  },
};

// another tab signed in or out
window.addEventListener('storage', (e) => {
  if (e.key === KEY_STORAGE) set({ key: e.newValue, notice: null });
});

export function useAuth(): AuthState {
  return useSyncExternalStore(auth.subscribe, auth.get);
}

/**
 * The stored key for the signed-in pages ('' for a moment after signing out, while the browser is
 * taken to the sign-in form: their queries are disabled then, so nothing is sent without a key).
 */
export function useKey(): string {
  return useAuth().key ?? '';
}
