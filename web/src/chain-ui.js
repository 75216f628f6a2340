// The on-chain half of the page; wired once the SDK's chain client lands.
/** @param {any} _page */
export function setupChain(_page) {}
