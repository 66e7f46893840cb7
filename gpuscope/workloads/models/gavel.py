"""Gavel's job types in plain PyTorch (Narayanan et al., OSDI 2020, Table 2 and
``scheduler/job_table.py`` / ``workloads/pytorch/`` of stanford-futuredata/gavel).

Each model follows the code Gavel ran (its measured throughputs are in
``datasets/measured/gavel-throughputs.csv``), with the defaults of the command lines in Gavel's job table:

* ``resnet18``: kuangliu/pytorch-cifar ResNet-18 (BasicBlock [2, 2, 2, 2], 3x3 stem, 10
  classes), CIFAR-10, SGD momentum 0.9 (``image_classification/cifar10``);
* ``transformer_base``: "Attention is all you need" base (jadore801120's implementation: 6+6
  layers, d_model 512, 8 heads, d_inner 2048, dropout 0.1, ``-proj_share_weight``) on
  Multi30k de-en (vocabularies ``MULTI30K_VOCAB``, sentences padded to ``MULTI30K_LEN``
  tokens), Adam (``translation/train.py``);
* ``lstm_lm``: the PyTorch word language model (2-layer LSTM, emsize = nhid = 200, bptt 35,
  dropout 0.2, untied), Wikitext-2 (33,278 words), SGD lr 20 with gradient clipping 0.25
  (``language_modeling/main.py``);
* ``rec_autoencoder``: Recoder's ``DynamicAutoencoder(hidden_layers=[200], tanh,
  noise_prob=0.5)`` on ML-20M (``ML20M_ITEMS`` items after Liang et al.'s ``pro_sg``
  filtering), logistic loss, Adam (``recommendation/train.py``); negative sampling keeps the
  whole item layer here (an upper bound on its output layer). The batch is built on the
  host every step (``recoder/data.py``, ``num_data_workers=0``: CSR row slicing, ``nonzero``,
  ``np.unique`` and ``torch.LongTensor([rows, cols])`` over the batch's ~73 ratings per
  user), copied as a COO tensor and densified on the device (``recoder/model.py``); the
  step's ``meta`` gives the emulator the ratings per user and the dense width;
* ``cyclegan``: eriklindernoren's PyTorch-GAN CycleGAN (ResNet generators with 9 residual
  blocks, 64 filters, 70x70 PatchGAN discriminators), monet2photo 256x256, batch 1, Adam,
  GAN (MSE) + cycle + identity (L1) losses (``cyclegan/cyclegan.py``);
* ``a3c``: the A3C-LSTM of dgriff777/rl_a3c_pytorch Gavel runs on PongDeterministic-v4
  (4 conv + max-pool layers, LSTMCell 1024 -> 512, actor and critic heads, 1x80x80 frames)
  with ``--workers 4 --amsgrad True`` (``scheduler/job_table.py``). One Gavel step is one
  iteration of a worker's loop (``workloads/pytorch/rl/train.py``; throughput is counted on
  worker 0): copy the shared CPU model's weights to the GPU (``load_state_dict``), act for
  ``--num-steps`` 20 frames -- each a batch-1 forward through the convs and the LSTM cell,
  softmax/log-softmax/entropy, a sampled action copied to the host (``action.cpu()``: the
  host waits) and one ``env.step`` on the CPU (PongDeterministic-v4: 4 emulator frames,
  crop/resize/normalise) whose frame goes back to the GPU --, one bootstrap value forward,
  the per-frame GAE/loss loop, one backward through the 20 forwards, the gradients copied to
  the shared CPU model (``ensure_shared_grads``) and ``SharedAdam`` (AMSGrad) stepping the
  shared model on the CPU. The traced step is that loop (``A3C_STEPS`` forwards at batch
  1, the loss loop, the backward, the optimizer); what happens on the host is in
  ``GavelStep.meta`` for the emulator: ``env_steps`` (host round trips with an environment
  step each), ``host_optimizer`` (weights in, gradients out, optimizer on the CPU) and
  ``workers`` (4 processes doing this on the one GPU, ``main.py``'s ``--workers``).

``gavel_step(name, batch_size, device)`` builds the model, its optimizer(s), a batch and the
training step, ready for ``gpuscope.graphs.frontends.torch.trace_train_step``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn
from torch.nn import functional as F

from gpuscope.core.errors import InputError

MULTI30K_VOCAB: tuple[int, int] = (7853, 5893)  # de, en words with min_freq 2 (torchtext)
MULTI30K_LEN: int = 30  # padded batch length (mean ~13 tokens per sentence, longest ~40)
WIKITEXT2_VOCAB: int = 33278
ML20M_ITEMS: int = 20108
#: ML-20M after Liang et al.'s ``pro_sg`` preprocessing (ratings > 3.5, users with >= 5):
#: 136,677 users and 10.0 M interactions (Liang et al., "Variational Autoencoders for
#: Collaborative Filtering", WWW 2018, Table 1), i.e. ~73 ratings per user in a batch.
ML20M_USERS: int = 136_677
ML20M_INTERACTIONS: float = 10.0e6
GAVEL_MODELS: tuple[str, ...] = (
    "resnet18", "transformer_base", "lstm_lm", "rec_autoencoder", "cyclegan", "a3c",
)


# --- ResNet-18 (kuangliu/pytorch-cifar) ----------------------------------------------------
class BasicBlock(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.c1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.b1 = nn.BatchNorm2d(cout)
        self.c2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.b2 = nn.BatchNorm2d(cout)
        self.sc = nn.Sequential()
        if stride != 1 or cin != cout:
            self.sc = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.relu(self.b1(self.c1(x)))
        return F.relu(self.b2(self.c2(y)) + self.sc(x))


def resnet18_cifar(num_classes: int = 10) -> nn.Module:
    layers: list[nn.Module] = [nn.Conv2d(3, 64, 3, 1, 1, bias=False), nn.BatchNorm2d(64), nn.ReLU()]
    cin = 64
    for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
        layers += [BasicBlock(cin, cout, stride), BasicBlock(cout, cout, 1)]
        cin = cout
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(512, num_classes)]
    return nn.Sequential(*layers)


# --- Transformer base (jadore801120/attention-is-all-you-need-pytorch) ----------------------
class Seq2SeqTransformer(nn.Module):
    """Encoder-decoder Transformer with sinusoidal positions and the target projection tied
    to the target embedding (``-proj_share_weight``).

    Gavel's 2018 code computes attention explicitly (``q k^T / temperature``, masked softmax,
    dropout, ``@ v``), so the traced graph keeps the math path of ``nn.Transformer``'s
    attention, which is those ops (``math_attention``: ``trace_train_step`` does not fuse it)."""

    #: the real code's attention is explicit, not a fused kernel (gpuscope.graphs.ops.attention)
    math_attention = True

    def __init__(self, src_vocab: int, tgt_vocab: int, d_model: int = 512, heads: int = 8,
                 d_inner: int = 2048, layers: int = 6, dropout: float = 0.1,
                 max_len: int = 200) -> None:
        super().__init__()
        self.src_emb = nn.Embedding(src_vocab, d_model, padding_idx=0)
        self.tgt_emb = nn.Embedding(tgt_vocab, d_model, padding_idx=0)
        pos = torch.arange(max_len).unsqueeze(1)
        div = torch.exp(torch.arange(0, d_model, 2) * (-9.210340371976184 / d_model))
        pe = torch.zeros(max_len, d_model)
        pe[:, 0::2], pe[:, 1::2] = torch.sin(pos * div), torch.cos(pos * div)
        self.register_buffer("pe", pe, persistent=False)
        self.core = nn.Transformer(d_model, heads, layers, layers, d_inner, dropout,
                                   batch_first=True)
        self.proj = nn.Linear(d_model, tgt_vocab, bias=False)
        self.proj.weight = self.tgt_emb.weight
        self.scale = d_model ** -0.5

    def forward(self, src: torch.Tensor, tgt: torch.Tensor) -> torch.Tensor:
        pe = self.get_buffer("pe")
        s = self.src_emb(src) + pe[: src.shape[1]]
        t = self.tgt_emb(tgt) + pe[: tgt.shape[1]]
        mask = torch.triu(torch.full((tgt.shape[1], tgt.shape[1]), float("-inf"),
                                     device=tgt.device), 1)
        return self.proj(self.core(s, t, tgt_mask=mask, tgt_is_causal=True)) * self.scale


# --- LSTM language model (pytorch/examples word_language_model) ------------------------------
class RNNModel(nn.Module):
    def __init__(self, ntoken: int = WIKITEXT2_VOCAB, ninp: int = 200, nhid: int = 200,
                 nlayers: int = 2, dropout: float = 0.2) -> None:
        super().__init__()
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(ntoken, ninp)
        self.rnn = nn.LSTM(ninp, nhid, nlayers, dropout=dropout)
        self.decoder = nn.Linear(nhid, ntoken)

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # x: (bptt, batch)
        out, _ = self.rnn(self.drop(self.encoder(x)))
        return self.decoder(self.drop(out))


class BatchFirstLM(nn.Module):
    """The catalog's ``lm`` interface, (batch, seq) ids -> (batch, seq, vocab) logits, around
    ``RNNModel`` (which, as in pytorch/examples, runs time-major)."""

    def __init__(self, ntoken: int = WIKITEXT2_VOCAB) -> None:
        super().__init__()
        self.lm = RNNModel(ntoken)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.lm(ids.t()).transpose(0, 1)


# --- Recoder DynamicAutoencoder ---------------------------------------------------------------
class DenoisingAutoencoder(nn.Module):
    """items -> 200 (tanh) -> items, input dropout 0.5 (Recoder's noise_prob)."""

    def __init__(self, items: int = ML20M_ITEMS, hidden: int = 200, noise: float = 0.5) -> None:
        super().__init__()
        self.noise = nn.Dropout(noise)
        self.enc = nn.Linear(items, hidden)
        self.dec = nn.Linear(hidden, items)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.dec(torch.tanh(self.enc(self.noise(x))))


# --- CycleGAN (eriklindernoren/PyTorch-GAN) ---------------------------------------------------
class ResidualBlock(nn.Module):
    def __init__(self, c: int) -> None:
        super().__init__()
        self.block = nn.Sequential(
            nn.ReflectionPad2d(1), nn.Conv2d(c, c, 3), nn.InstanceNorm2d(c), nn.ReLU(inplace=True),
            nn.ReflectionPad2d(1), nn.Conv2d(c, c, 3), nn.InstanceNorm2d(c))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.block(x)


def cyclegan_generator(blocks: int = 9, c: int = 3) -> nn.Module:
    f = 64
    layers: list[nn.Module] = [nn.ReflectionPad2d(c), nn.Conv2d(c, f, 7), nn.InstanceNorm2d(f),
                               nn.ReLU(inplace=True)]
    for _ in range(2):
        layers += [nn.Conv2d(f, 2 * f, 3, 2, 1), nn.InstanceNorm2d(2 * f), nn.ReLU(inplace=True)]
        f *= 2
    layers += [ResidualBlock(f) for _ in range(blocks)]
    for _ in range(2):
        layers += [nn.Upsample(scale_factor=2), nn.Conv2d(f, f // 2, 3, 1, 1),
                   nn.InstanceNorm2d(f // 2), nn.ReLU(inplace=True)]
        f //= 2
    layers += [nn.ReflectionPad2d(c), nn.Conv2d(f, c, 7), nn.Tanh()]
    return nn.Sequential(*layers)


def cyclegan_discriminator(c: int = 3) -> nn.Module:
    def block(i: int, o: int, norm: bool = True) -> list[nn.Module]:
        out: list[nn.Module] = [nn.Conv2d(i, o, 4, 2, 1)]
        if norm:
            out.append(nn.InstanceNorm2d(o))
        return out + [nn.LeakyReLU(0.2, inplace=True)]

    return nn.Sequential(*block(c, 64, False), *block(64, 128), *block(128, 256),
                         *block(256, 512), nn.ZeroPad2d((1, 0, 1, 0)), nn.Conv2d(512, 1, 4, padding=1))


# --- A3C-LSTM (dgriff777/rl_a3c_pytorch) --------------------------------------------------------
A3C_STEPS: int = 20  # --num-steps (train.py's rollout length between updates)


class A3CLstm(nn.Module):
    def __init__(self, channels: int = 1, actions: int = 6) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(channels, 32, 5, 1, 2)
        self.conv2 = nn.Conv2d(32, 32, 5, 1, 1)
        self.conv3 = nn.Conv2d(32, 64, 4, 1, 1)
        self.conv4 = nn.Conv2d(64, 64, 3, 1, 1)
        self.lstm = nn.LSTMCell(1024, 512)
        self.critic = nn.Linear(512, 1)
        self.actor = nn.Linear(512, actions)

    def forward(self, frame: torch.Tensor, hc: tuple[torch.Tensor, torch.Tensor]
                ) -> tuple[torch.Tensor, torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
        """One frame (1, C, 80, 80) and the LSTM state -> value, logits, next state."""
        x = frame
        for conv in (self.conv1, self.conv2, self.conv3, self.conv4):
            x = F.relu(F.max_pool2d(conv(x), 2, 2))
        h, c = self.lstm(x.view(x.shape[0], -1), hc)
        return self.critic(h), self.actor(h), (h, c)


@dataclass
class GavelStep:
    """What ``trace_train_step`` needs: the step, its batch, the modules and optimizers."""

    step: Callable[[Any], torch.Tensor]
    batch: tuple[torch.Tensor, ...]
    modules: nn.Module
    optimizers: list[torch.optim.Optimizer]
    input_shape: tuple[int, ...]
    meta: dict[str, Any] = field(default_factory=dict)


def _classifier_step(model: nn.Module, opt: torch.optim.Optimizer) -> Callable[[Any], torch.Tensor]:
    def step(b: tuple[torch.Tensor, ...]) -> torch.Tensor:
        opt.zero_grad()
        loss = F.cross_entropy(model(b[0]), b[1])
        loss.backward()
        opt.step()
        return loss
    return step


def _a3c_step(net: A3CLstm, opt: torch.optim.Optimizer,
              gamma: float = 0.99, tau: float = 1.0) -> Callable[[Any], torch.Tensor]:
    """One iteration of Gavel's A3C worker loop (module docstring; ``train.py``): act on
    ``A3C_STEPS`` frames at batch 1, bootstrap, GAE and losses per frame, backward, step."""

    def step(bt: tuple[torch.Tensor, ...]) -> torch.Tensor:
        frames, rewards = bt
        h = c = frames.new_zeros(1, 512)
        values, log_probs, entropies = [], [], []
        for t in range(A3C_STEPS):  # player.action_train()
            value, logit, (h, c) = net(frames[t:t + 1], (h, c))
            prob, log_prob = F.softmax(logit, dim=1), F.log_softmax(logit, dim=1)
            entropies.append(-(log_prob * prob).sum(1))
            action = prob.multinomial(1).detach()  # .cpu() and env.step on the host
            log_probs.append(log_prob.gather(1, action))
            values.append(value)
        R = net(frames[A3C_STEPS:], (h, c))[0].detach()
        values.append(R)
        policy_loss = value_loss = frames.new_zeros(1, 1)
        gae = frames.new_zeros(1, 1)
        for i in reversed(range(A3C_STEPS)):
            R = gamma * R + rewards[i]
            advantage = R - values[i]
            value_loss = value_loss + 0.5 * advantage.pow(2)
            delta_t = rewards[i] + gamma * values[i + 1].detach() - values[i].detach()
            gae = gae * gamma * tau + delta_t
            policy_loss = policy_loss - log_probs[i] * gae.detach() - 0.01 * entropies[i]
        net.zero_grad()
        loss = (policy_loss + 0.5 * value_loss).sum()
        loss.backward()
        opt.step()
        return loss
    return step


def gavel_step(name: str, batch_size: int, device: str = "meta") -> GavelStep:
    """Model, optimizer(s), batch and training step of Gavel job type ``name`` (module doc)."""
    b, dev = int(batch_size), torch.device(device)
    opt: torch.optim.Optimizer
    if name == "resnet18":
        m = resnet18_cifar().to(dev)
        opt = torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-4)
        x = torch.empty(b, 3, 32, 32, device=dev)
        return GavelStep(_classifier_step(m, opt), (x, torch.zeros(b, dtype=torch.long, device=dev)),
                         m, [opt], (b, 3, 32, 32))
    if name == "transformer_base":
        t = Seq2SeqTransformer(*MULTI30K_VOCAB).to(dev)
        opt = torch.optim.Adam(t.parameters(), lr=1e-3, betas=(0.9, 0.98), eps=1e-9)
        src = torch.zeros(b, MULTI30K_LEN, dtype=torch.long, device=dev)
        tgt = torch.zeros(b, MULTI30K_LEN, dtype=torch.long, device=dev)

        def tstep(bt: tuple[torch.Tensor, ...]) -> torch.Tensor:
            opt.zero_grad()
            logits = t(bt[0], bt[1][:, :-1])
            loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), bt[1][:, 1:].reshape(-1),
                                   ignore_index=0, label_smoothing=0.1)
            loss.backward()
            opt.step()
            return loss
        return GavelStep(tstep, (src, tgt), t, [opt], (b, MULTI30K_LEN))
    if name == "lstm_lm":
        lm = RNNModel().to(dev)
        opt = torch.optim.SGD(lm.parameters(), lr=20.0)
        x = torch.zeros(35, b, dtype=torch.long, device=dev)

        def lstep(bt: tuple[torch.Tensor, ...]) -> torch.Tensor:
            lm.zero_grad()
            out = lm(bt[0])
            loss = F.cross_entropy(out.reshape(-1, WIKITEXT2_VOCAB), bt[1].reshape(-1))
            loss.backward()
            nn.utils.clip_grad_norm_(lm.parameters(), 0.25)
            opt.step()
            return loss
        return GavelStep(lstep, (x, x.clone()), lm, [opt], (35, b))
    if name == "rec_autoencoder":
        ae = DenoisingAutoencoder().to(dev)
        opt = torch.optim.Adam(ae.parameters(), lr=1e-3, weight_decay=2e-5)
        x = torch.empty(b, ML20M_ITEMS, device=dev)

        def rstep(bt: tuple[torch.Tensor, ...]) -> torch.Tensor:
            opt.zero_grad()
            loss = F.binary_cross_entropy_with_logits(ae(bt[0]), bt[0])
            loss.backward()
            opt.step()
            return loss
        # Recoder builds each batch on the main thread (num_data_workers=0) as a sparse COO
        # matrix, copies it to the device and densifies it there (hostwork.sparse_batch_host_s)
        return GavelStep(rstep, (x,), ae, [opt], (b, ML20M_ITEMS),
                         {"sparse_nnz_per_sample": ML20M_INTERACTIONS / ML20M_USERS,
                          "sparse_dense_width": ML20M_ITEMS})
    if name == "cyclegan":
        nets = nn.ModuleDict({"g_ab": cyclegan_generator(), "g_ba": cyclegan_generator(),
                              "d_a": cyclegan_discriminator(), "d_b": cyclegan_discriminator()}).to(dev)
        og = torch.optim.Adam(list(nets["g_ab"].parameters()) + list(nets["g_ba"].parameters()),
                              lr=2e-4, betas=(0.5, 0.999))
        oda = torch.optim.Adam(nets["d_a"].parameters(), lr=2e-4, betas=(0.5, 0.999))
        odb = torch.optim.Adam(nets["d_b"].parameters(), lr=2e-4, betas=(0.5, 0.999))
        a = torch.empty(b, 3, 256, 256, device=dev)

        def cstep(bt: tuple[torch.Tensor, ...]) -> torch.Tensor:
            ra, rb = bt
            og.zero_grad()
            fb, fa = nets["g_ab"](ra), nets["g_ba"](rb)
            pa, pb = nets["d_a"](fa), nets["d_b"](fb)
            loss_g = (F.mse_loss(pa, torch.ones_like(pa)) + F.mse_loss(pb, torch.ones_like(pb))
                      + 10 * (F.l1_loss(nets["g_ba"](fb), ra) + F.l1_loss(nets["g_ab"](fa), rb))
                      + 5 * (F.l1_loss(nets["g_ba"](ra), ra) + F.l1_loss(nets["g_ab"](rb), rb)))
            loss_g.backward()
            og.step()
            for d, o, real, fake in ((nets["d_a"], oda, ra, fa), (nets["d_b"], odb, rb, fb)):
                o.zero_grad()
                pr, pf = d(real), d(fake.detach())
                loss_d = 0.5 * (F.mse_loss(pr, torch.ones_like(pr)) + F.mse_loss(pf, torch.zeros_like(pf)))
                loss_d.backward()
                o.step()
            return loss_g
        return GavelStep(cstep, (a, a.clone()), nets, [og, oda, odb], (b, 3, 256, 256))
    if name == "a3c":
        net = A3CLstm().to(dev)
        opt = torch.optim.Adam(net.parameters(), lr=1e-4, amsgrad=True)
        frames = torch.empty(A3C_STEPS + 1, 1, 80, 80, device=dev)
        return GavelStep(_a3c_step(net, opt), (frames, torch.empty(A3C_STEPS, device=dev)), net,
                         [opt], (A3C_STEPS + 1, 1, 80, 80),
                         {"env_steps": A3C_STEPS, "host_optimizer": True, "workers": 4})
    raise InputError(f"unknown Gavel model {name!r}; expected one of {', '.join(GAVEL_MODELS)}")

