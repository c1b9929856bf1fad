/** The version of deep-research, as in package.json. */
export const version = "0.1.0"
