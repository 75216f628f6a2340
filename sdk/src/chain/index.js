// @ts-check
// The chain client: uploading models, quoting, opening, cranking,
// following and closing runs on any Solana cluster, with @solana/kit
// signers; every number from the WebAssembly module.

export { createCurtaClient } from './client.js';
export { memoryJournal } from './journal.js';
export { configSigner, deriveSigner, derivationSecret, modelSigner, runSigner, weightSigner } from './keys.js';
export {
  ACCOUNT_TAGS,
  CurtaAccountError,
  MODEL_HEADER_LEN,
  MODEL_SECTION_LEN,
  ModelStatus,
  RUN_HEADER_LEN,
  WEIGHT_HEADER_LEN,
  callbackLength,
  decodeConfigAccount,
  decodeModelAccount,
  decodeRunAccount,
  decodeWeightAccount,
} from './accounts.js';
export { fetchConfig, fetchModel, fetchRawAccount, fetchRunAccount, fetchWeight } from './fetch.js';
export { DEFAULT_ALLOWANCE, MIN_ALLOWANCE, closeConfig, initConfig, setAllowance } from './config.js';
export { artifactToUpload, describeArtifact, quoteUpload, sectionDigest, uploadModel } from './upload.js';
export { checkArtifact, checkModelIdentity, fetchArtifact, modelIdentity } from './models.js';
export { curtaProgramAt, isCurtaErrorAt } from './program.js';
export { MAX_PROMPT_BYTES, closeRun, fetchRun, openRun, openTransactions, reclaim, runAccountSigner, runParams } from './runs.js';
export { quoteRun } from './quote.js';
export { fundSessionKey, sendBack, sessionKeyFunding } from './session-key.js';
export { feesNaming, runWithSessionKey } from './session-key-run.js';
export { CurtaReplayMismatch, crankRun, firstDifference } from './crank.js';
export { deliverRun } from './deliver.js';
export { CrankMachine } from '../crank-machine.js';
export { BatchMachine } from '../batch-machine.js';
export { followRun } from './follow.js';
export { receiptDifferences, receiptsFromLogs } from './receipts.js';
export { checkAllowance, initialState, replayFromParams, replayFromState } from './replay.js';
export {
  CurtaTransactionError,
  PROGRAM_ERRORS,
  STALE_TURN,
  customCode,
  describeTransactionError,
  logTail,
  transactionError,
  programErrorMessage,
  programErrorName,
} from './errors.js';
export { PACKET_DATA_SIZE, fits, sendAll, sendAndConfirm, transactionSize } from './transactions.js';
