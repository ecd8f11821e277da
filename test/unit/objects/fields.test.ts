// The schemas of fields read from live objects: values when well-formed, absent when not.
import { describe, expect, it } from 'vitest';
import { configMapData, secretData, statusConditions, statusPhase } from '../../../src/objects/fields.ts';

describe('configMapData', () => {
  it('reads string values, and nothing from a missing or malformed data field', () => {
    expect(configMapData({ kind: 'ConfigMap', data: { inventory: '{}' } })).toEqual({ inventory: '{}' });
    expect(configMapData({ kind: 'ConfigMap' })).toEqual({});
    expect(configMapData({ kind: 'ConfigMap', data: { inventory: 7 } })).toEqual({});
    expect(configMapData({ kind: 'ConfigMap', data: 'text' })).toEqual({});
    expect(configMapData(undefined)).toEqual({});
  });
});

describe('secretData', () => {
  it('reads data and stringData separately; a malformed one reads as empty without losing the other', () => {
    expect(secretData({ data: { a: 'YQ==' }, stringData: { b: 'b' } })).toEqual({
      data: { a: 'YQ==' },
      stringData: { b: 'b' },
    });
    expect(secretData({ data: null, stringData: { b: 'b' } })).toEqual({ data: {}, stringData: { b: 'b' } });
    expect(secretData({ data: { a: 1 }, stringData: { b: 'b' } })).toEqual({
      data: {},
      stringData: { b: 'b' },
    });
  });
});

describe('statusPhase', () => {
  it('reads status.phase when it is a string', () => {
    expect(statusPhase({ status: { phase: 'Terminating' } })).toBe('Terminating');
    expect(statusPhase({ status: { phase: 3 } })).toBeUndefined();
    expect(statusPhase({ status: null })).toBeUndefined();
    expect(statusPhase({})).toBeUndefined();
  });
});

describe('statusConditions', () => {
  it('keeps the entries that are conditions, in order', () => {
    const conditions = statusConditions({
      status: {
        conditions: [
          { type: 'Available', status: 'True' },
          'not a condition',
          { status: 'False' },
          { type: 'Progressing', status: 'False', reason: 'ProgressDeadlineExceeded', message: 'm' },
        ],
      },
    });
    expect(conditions.map((c) => c.type)).toEqual(['Available', 'Progressing']);
    expect(conditions[1]?.reason).toBe('ProgressDeadlineExceeded');
    expect(statusConditions({ status: { conditions: 'x' } })).toEqual([]);
    expect(statusConditions({})).toEqual([]);
  });
});
