//! The storyteller's instructions (`examples/storyteller`), built as a
//! client of it would: for its SBF VM test and its run on curta-localnet.

use curta_client::instructions::ModelKeys;
use curta_core::format::Config;
use curta_core::inference::RunParams;
use curta_core::protocol::run;
use curta_core::protocol::run::CrankFee;
use curta_storyteller::instruction::{Request, CALLBACK_LEN, CANCEL, FULFILL};
use curta_storyteller::state::SEED;
use solana_instruction::{AccountMeta, Instruction};
use solana_pubkey::Pubkey;

const SYSTEM_PROGRAM: Pubkey = Pubkey::new_from_array([0; 32]);

/// The storyteller at `program`, over the Curta program at `curta`.
#[derive(Clone, Copy, Debug)]
pub struct Storyteller {
    pub program: Pubkey,
    pub curta: Pubkey,
}

impl Storyteller {
    /// The request account of a run: `["request", run]`.
    pub fn request_address(&self, run: &Pubkey) -> Pubkey {
        Pubkey::find_program_address(&[SEED, run.as_ref()], &self.program).0
    }

    /// The size of a run the storyteller opens: its state and the callback
    /// record `request` names (`CALLBACK_LEN`).
    pub fn run_len(config: &Config, p: &RunParams) -> usize {
        run::account_size(config, p.prompt.len(), p.max_tokens, CALLBACK_LEN)
            .expect("run parameters in range")
    }

    /// `request`: the user asks for `p` of `keys`' model (its royalty and
    /// identity as read), paying each turn's sender `crank`'s fee and its
    /// deliverer `delivery_fee`; `run` is created in the same transaction
    /// (`run_len` bytes) and signs.
    pub fn request(
        &self,
        user: &Pubkey,
        run: &Pubkey,
        keys: &ModelKeys,
        p: &RunParams,
        crank: &CrankFee,
        delivery_fee: u64,
    ) -> Instruction {
        let args = Request {
            max_tokens: p.max_tokens,
            temperature_q16: p.temperature_q16,
            seed: p.seed,
            royalty: keys.royalty,
            model_identity: &keys.identity,
            crank_fee: crank.fee,
            crank_deposit: crank.deposit,
            delivery_fee,
            prompt: p.prompt,
        };
        let mut data = vec![0u8; args.encoded_len()];
        let n = args.encode_into(&mut data);
        debug_assert_eq!(n, Some(data.len()));
        Instruction {
            program_id: self.program,
            accounts: vec![
                AccountMeta::new(*user, true),
                AccountMeta::new(self.request_address(run), false),
                AccountMeta::new(*run, true),
                AccountMeta::new_readonly(keys.config_account, false),
                AccountMeta::new_readonly(keys.model, false),
                AccountMeta::new_readonly(self.curta, false),
                AccountMeta::new_readonly(SYSTEM_PROGRAM, false),
            ],
            data,
        }
    }

    /// `fulfill`: anyone sends it.
    pub fn fulfill(&self, request: &Pubkey, run: &Pubkey, user: &Pubkey) -> Instruction {
        Instruction {
            program_id: self.program,
            accounts: vec![
                AccountMeta::new(*request, false),
                AccountMeta::new(*run, false),
                AccountMeta::new(*user, false),
                AccountMeta::new_readonly(self.curta, false),
            ],
            data: vec![FULFILL],
        }
    }

    /// `cancel`: the user, signing, takes back everything of a request not
    /// fulfilled (the run closed through Curta if it is still there).
    pub fn cancel(&self, user: &Pubkey, request: &Pubkey, run: &Pubkey) -> Instruction {
        Instruction {
            program_id: self.program,
            accounts: vec![
                AccountMeta::new(*user, true),
                AccountMeta::new(*request, false),
                AccountMeta::new(*run, false),
                AccountMeta::new_readonly(self.curta, false),
            ],
            data: vec![CANCEL],
        }
    }
}
