// Kubernetes quantities from the control plane's cores, megabytes and gigabytes.
import { describe, expect, it } from 'vitest';
import { cpuQuantity, memoryQuantity, storageQuantity } from '../../../src/render/quantities.ts';

describe('quantities', () => {
  it.each([
    [0.25, '250m'],
    [0.5, '500m'],
    [1, '1'],
    [2, '2'],
    [1.5, '1500m'],
    [0.001, '1m'],
    [0.0004, '0'],
  ])('cpu %d cores → %s', (cores, quantity) => expect(cpuQuantity(cores)).toBe(quantity));

  it.each([
    [256, '256Mi'],
    [1024, '1024Mi'],
    [100.2, '101Mi'],
  ])('memory %d MB → %s', (mb, quantity) => expect(memoryQuantity(mb)).toBe(quantity));

  it('storage rounds up to whole Gi', () => {
    expect(storageQuantity(10)).toBe('10Gi');
    expect(storageQuantity(0.5)).toBe('1Gi');
  });
});
