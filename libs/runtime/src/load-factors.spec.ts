import { afterEach, describe, expect, it } from 'vitest';
import { loadFactors } from './cuda-backend';
import { modelSpecSchema } from './model-spec.schema';

const spec = modelSpecSchema.parse({ numeric: [], slots: [{ name: 'user', vocab: 100 }, { name: 'item', vocab: 50 }, { name: 'query', vocab: 10 }] });

describe('ABACUS_HBM_LOAD_FACTORS (per-table shares of the device cache)', () => {
  const had = process.env.ABACUS_HBM_LOAD_FACTORS;
  afterEach(() => {
    if (had === undefined) delete process.env.ABACUS_HBM_LOAD_FACTORS;
    else process.env.ABACUS_HBM_LOAD_FACTORS = had;
  });
  const withEnv = (v: string | undefined) => {
    if (v === undefined) delete process.env.ABACUS_HBM_LOAD_FACTORS;
    else process.env.ABACUS_HBM_LOAD_FACTORS = v;
    return () => loadFactors(spec);
  };

  it('is undefined when unset or blank (the budget decides)', () => {
    expect(withEnv(undefined)()).toBeUndefined();
    expect(withEnv('  ')()).toBeUndefined();
  });

  it('gives one factor to every table, or each slot its named factor and the rest the default, in the spec order', () => {
    expect(withEnv('0.25')()).toEqual([0.25, 0.25, 0.25]);
    expect(withEnv('item=1, *=0.1')()).toEqual([0.1, 1, 0.1]);
    expect(withEnv('query=0.5,user=0.2,item=0.3')()).toEqual([0.2, 0.3, 0.5]);
  });

  it('names the entry and the reason when a value is bad', () => {
    expect(withEnv('0')).toThrow(/ABACUS_HBM_LOAD_FACTORS: the factor: '0' is not a share of the rows in \(0, 1\]/);
    expect(withEnv('1.5')).toThrow(/'1.5' is not a share/);
    expect(withEnv('user=abc,*=0.1')).toThrow(/user: 'abc' is not a share/);
    expect(withEnv('ad=0.5,*=0.1')).toThrow(/'ad' is not a slot of this model \(user, item, query\)/);
    expect(withEnv('user=0.5')).toThrow(/no factor for item, query \(name them or give \*=factor\)/);
    expect(withEnv('user')).toThrow(/'user' is not a share/);
    expect(withEnv('=0.5,*=0.1')).toThrow(/'=0.5' is not name=factor/);
  });
});
