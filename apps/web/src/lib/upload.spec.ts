import { describe, expect, it } from 'vitest';
import {
  describeUpload,
  formatBytes,
  uploadActive,
  uploadFraction,
  uploadReducer,
  type UploadEvent,
  type UploadState,
} from './upload';
import { dispositionName } from './download';

const run = (events: UploadEvent[], from: UploadState = { phase: 'idle' }) => events.reduce(uploadReducer, from);

describe('upload progress state', () => {
  it('goes idle → sending → processing → done, progress never going back', () => {
    const s1 = run([
      { type: 'start', total: 1000 },
      { type: 'progress', loaded: 400, total: 1000 },
    ]);
    expect(s1).toEqual({ phase: 'sending', loaded: 400, total: 1000 });
    expect(uploadFraction(s1)).toBe(0.4);
    expect(describeUpload(s1)).toBe('Uploading 400 B of 1000 B (40%)');
    expect(uploadActive(s1)).toBe(true);
    const s2 = run([{ type: 'progress', loaded: 300, total: 1000 }], s1);
    expect(s2).toEqual(s1);
    const s3 = run([{ type: 'progress', loaded: 1000, total: 1000 }, { type: 'sent' }], s2);
    expect(s3).toEqual({ phase: 'processing', total: 1000 });
    expect(uploadFraction(s3)).toBe(1);
    expect(uploadActive(s3)).toBe(true);
    expect(run([{ type: 'done' }], s3)).toEqual({ phase: 'done' });
  });

  it('ends on a failure or a cancel, and late events change nothing after the end', () => {
    const failed = run([
      { type: 'start', total: 10 },
      { type: 'failed', message: 'HTTP 400' },
    ]);
    expect(failed).toEqual({ phase: 'failed', message: 'HTTP 400' });
    expect(describeUpload(failed)).toBe('Upload failed: HTTP 400');
    expect(uploadActive(failed)).toBe(false);
    const cancelled = run([{ type: 'start', total: 10 }, { type: 'progress', loaded: 5, total: 10 }, { type: 'cancelled' }]);
    expect(cancelled).toEqual({ phase: 'cancelled' });
    // an abort is followed by no other outcome, and a stray progress event does not revive it
    expect(
      run([{ type: 'progress', loaded: 9, total: 10 }, { type: 'failed', message: 'x' }, { type: 'done' }], cancelled),
    ).toEqual(cancelled);
    expect(describeUpload(cancelled)).toBe('Upload cancelled; nothing was stored');
    expect(run([{ type: 'reset' }], cancelled)).toEqual({ phase: 'idle' });
  });

  it('has no fraction when the size is unknown', () => {
    const s = run([
      { type: 'start', total: null },
      { type: 'progress', loaded: 2048, total: null },
    ]);
    expect(uploadFraction(s)).toBeNull();
    expect(describeUpload(s)).toBe('Uploading 2.0 KB');
    // a later event that knows the size fills it in
    expect(uploadFraction(run([{ type: 'progress', loaded: 2048, total: 4096 }], s))).toBe(0.5);
  });

  it('formats byte counts', () => {
    expect(formatBytes(0)).toBe('0 B');
    expect(formatBytes(1536)).toBe('1.5 KB');
    expect(formatBytes(50 * 1024 * 1024)).toBe('50 MB');
    expect(formatBytes(-1)).toBe('—');
    expect(formatBytes(null)).toBe('—');
  });
});

describe('download file names', () => {
  it('reads Content-Disposition, preferring filename*', () => {
    expect(dispositionName('attachment; filename="ctr-v3.onnx"')).toBe('ctr-v3.onnx');
    expect(dispositionName('attachment; filename*=UTF-8\'\'ctr%20v3.onnx; filename="x"')).toBe('ctr v3.onnx');
    expect(dispositionName('attachment; filename=model.safetensors')).toBe('model.safetensors');
    expect(dispositionName(null)).toBeNull();
    expect(dispositionName('inline')).toBeNull();
  });
});
