/**
 * Colour is for people: only on a terminal, and never when NO_COLOR is set to anything but
 * the empty string (https://no-color.org).
 */
export function colourWanted(
  stream: { readonly isTTY?: boolean },
  env: NodeJS.ProcessEnv,
): boolean {
  return stream.isTTY === true && (env.NO_COLOR === undefined || env.NO_COLOR === '');
}

/** ANSI SGR styles; every one is the identity when colour is off. */
export interface Style {
  readonly bold: (text: string) => string;
  readonly dim: (text: string) => string;
  readonly green: (text: string) => string;
  readonly yellow: (text: string) => string;
  readonly red: (text: string) => string;
}

export function styleFor(colour: boolean): Style {
  const sgr =
    (on: number, off: number) =>
    (text: string): string =>
      colour ? `\x1b[${on}m${text}\x1b[${off}m` : text;
  return {
    bold: sgr(1, 22),
    dim: sgr(2, 22),
    green: sgr(32, 39),
    yellow: sgr(33, 39),
    red: sgr(31, 39),
  };
}
