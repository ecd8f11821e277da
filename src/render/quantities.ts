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
