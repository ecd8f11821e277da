// Unit conversions from the control plane's numbers to Kubernetes quantities.

/** Cores to a cpu quantity: 0.25 → "250m", 2 → "2", 1.5 → "1500m". */
export function cpuQuantity(cores: number): string {
  const millis = Math.round(cores * 1000);
  return millis % 1000 === 0 ? String(millis / 1000) : `${millis}m`;
}

/** Megabytes (by name; treated as mebibytes) to "Mi", rounded up to a whole unit. */
export function memoryQuantity(mb: number): string {
  return `${Math.ceil(mb)}Mi`;
}

/** Gibibytes to "Gi", rounded up to a whole unit. */
export function storageQuantity(gi: number): string {
  return `${Math.ceil(gi)}Gi`;
}

export function cpuMillis(cores: number): number {
  return Math.round(cores * 1000);
}

// A Kubernetes quantity: a decimal number, then a binary suffix, a decimal one or an exponent.
// Bounded by the length check before it, and free of nested repetition.
const QUANTITY = /^([+-]?)(\d+(?:\.\d*)?|\.\d+)(?:(Ki|Mi|Gi|Ti|Pi|Ei)|([numkMGTPE])|[eE]([+-]?\d+))?$/;
const BINARY_SUFFIX: Readonly<Record<string, number>> = {
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
  Pi: 2 ** 50,
  Ei: 2 ** 60,
};
const DECIMAL_SUFFIX: Readonly<Record<string, number>> = {
  n: 1e-9,
  u: 1e-6,
  m: 1e-3,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  P: 1e15,
  E: 1e18,
};

/**
 * The value of a quantity as Kubernetes reads it (`"512Mi"`, `"1.5G"`, `"1e3"`, or a JSON number),
 * in its base unit (bytes, cores); undefined for anything that is not one, `null` included.
 */
export function quantityValue(quantity: unknown): number | undefined {
  if (typeof quantity === 'number') return Number.isFinite(quantity) ? quantity : undefined;
  if (typeof quantity !== 'string' || quantity.length > 64) return undefined;
  const match = QUANTITY.exec(quantity);
  if (!match) return undefined;
  const [, sign, digits, binary, decimal, exponent] = match;
  const scale =
    binary !== undefined
      ? (BINARY_SUFFIX[binary] ?? 1)
      : decimal !== undefined
        ? (DECIMAL_SUFFIX[decimal] ?? 1)
        : exponent !== undefined
          ? 10 ** Number(exponent)
          : 1;
  return (sign === '-' ? -1 : 1) * Number(digits) * scale;
}
