"""BibTeX entries of the methods behind dpkit's numbers, and the selection for one report.

A report cites *exactly* the methods its numbers depend on: the mechanisms that spent the
budget, the accountants and conversions that turned events into (ε, δ) (recognised from the
citations in each result's ``method`` string, plus the subsampling analysis the accountant
used), the algorithm's paper, and the audit's statistics. :func:`keys_for` makes that
selection; :func:`render_bibtex` writes the entries.

Only entries whose metadata were checked are listed; missing page numbers are left out rather
than guessed.
"""

from __future__ import annotations

import re
from typing import Iterable, Mapping

ENTRIES: dict[str, str] = {
    # accountants and conversions
    "mironov2017renyi": """@inproceedings{mironov2017renyi,
  author = {Mironov, Ilya},
  title = {R{\\'e}nyi Differential Privacy},
  booktitle = {2017 IEEE 30th Computer Security Foundations Symposium (CSF)},
  pages = {263--275},
  year = {2017},
  doi = {10.1109/CSF.2017.11}
}""",
    "mironov2019sampled": """@misc{mironov2019sampled,
  author = {Mironov, Ilya and Talwar, Kunal and Zhang, Li},
  title = {R{\\'e}nyi Differential Privacy of the Sampled {G}aussian Mechanism},
  year = {2019},
  eprint = {1908.10530},
  archivePrefix = {arXiv}
}""",
    "wang2019subsampled": """@inproceedings{wang2019subsampled,
  author = {Wang, Yu-Xiang and Balle, Borja and Kasiviswanathan, Shiva Prasad},
  title = {Subsampled R{\\'e}nyi Differential Privacy and Analytical Moments Accountant},
  booktitle = {Proceedings of the 22nd International Conference on Artificial Intelligence and Statistics (AISTATS)},
  series = {Proceedings of Machine Learning Research},
  volume = {89},
  pages = {1226--1235},
  year = {2019}
}""",
    "balle2020hypothesis": """@inproceedings{balle2020hypothesis,
  author = {Balle, Borja and Barthe, Gilles and Gaboardi, Marco and Hsu, Justin and Sato, Tetsuya},
  title = {Hypothesis Testing Interpretations and {R}{\\'e}nyi Differential Privacy},
  booktitle = {Proceedings of the 23rd International Conference on Artificial Intelligence and Statistics (AISTATS)},
  series = {Proceedings of Machine Learning Research},
  volume = {108},
  pages = {2496--2506},
  year = {2020}
}""",
    "canonne2020discrete": """@inproceedings{canonne2020discrete,
  author = {Canonne, Cl{\\'e}ment L. and Kamath, Gautam and Steinke, Thomas},
  title = {The Discrete {G}aussian for Differential Privacy},
  booktitle = {Advances in Neural Information Processing Systems 33 (NeurIPS)},
  year = {2020},
  eprint = {2004.00010},
  archivePrefix = {arXiv}
}""",
    "bun2016concentrated": """@inproceedings{bun2016concentrated,
  author = {Bun, Mark and Steinke, Thomas},
  title = {Concentrated Differential Privacy: Simplifications, Extensions, and Lower Bounds},
  booktitle = {Theory of Cryptography (TCC 2016-B)},
  series = {Lecture Notes in Computer Science},
  volume = {9985},
  pages = {635--658},
  year = {2016},
  doi = {10.1007/978-3-662-53641-4_24}
}""",
    "balle2018improving": """@inproceedings{balle2018improving,
  author = {Balle, Borja and Wang, Yu-Xiang},
  title = {Improving the {G}aussian Mechanism for Differential Privacy: Analytical Calibration and Optimal Denoising},
  booktitle = {Proceedings of the 35th International Conference on Machine Learning (ICML)},
  series = {Proceedings of Machine Learning Research},
  volume = {80},
  pages = {394--403},
  year = {2018}
}""",
    "dwork2010boosting": """@inproceedings{dwork2010boosting,
  author = {Dwork, Cynthia and Rothblum, Guy N. and Vadhan, Salil},
  title = {Boosting and Differential Privacy},
  booktitle = {2010 IEEE 51st Annual Symposium on Foundations of Computer Science (FOCS)},
  pages = {51--60},
  year = {2010},
  doi = {10.1109/FOCS.2010.12}
}""",
    "kairouz2015composition": """@inproceedings{kairouz2015composition,
  author = {Kairouz, Peter and Oh, Sewoong and Viswanath, Pramod},
  title = {The Composition Theorem for Differential Privacy},
  booktitle = {Proceedings of the 32nd International Conference on Machine Learning (ICML)},
  series = {Proceedings of Machine Learning Research},
  volume = {37},
  pages = {1376--1385},
  year = {2015}
}""",
    "dong2022gaussian": """@article{dong2022gaussian,
  author = {Dong, Jinshuo and Roth, Aaron and Su, Weijie J.},
  title = {{G}aussian Differential Privacy},
  journal = {Journal of the Royal Statistical Society Series B: Statistical Methodology},
  volume = {84},
  number = {1},
  pages = {3--37},
  year = {2022},
  doi = {10.1111/rssb.12454}
}""",
    "koskela2020computing": """@inproceedings{koskela2020computing,
  author = {Koskela, Antti and J{\\"a}lk{\\"o}, Joonas and Honkela, Antti},
  title = {Computing Tight Differential Privacy Guarantees Using {FFT}},
  booktitle = {Proceedings of the 23rd International Conference on Artificial Intelligence and Statistics (AISTATS)},
  series = {Proceedings of Machine Learning Research},
  volume = {108},
  pages = {2560--2569},
  year = {2020}
}""",
    "doroshenko2022connect": """@article{doroshenko2022connect,
  author = {Doroshenko, Vadym and Ghazi, Badih and Kamath, Pritish and Kumar, Ravi and Manurangsi, Pasin},
  title = {Connect the Dots: Tighter Discrete Approximations of Privacy Loss Distributions},
  journal = {Proceedings on Privacy Enhancing Technologies},
  volume = {2022},
  number = {4},
  pages = {552--570},
  year = {2022},
  doi = {10.56553/popets-2022-0122}
}""",
    "meiser2018tight": """@inproceedings{meiser2018tight,
  author = {Meiser, Sebastian and Mohammadi, Esfandiar},
  title = {Tight on Budget? Tight Bounds for r-Fold Approximate Differential Privacy},
  booktitle = {Proceedings of the 2018 ACM SIGSAC Conference on Computer and Communications Security (CCS)},
  pages = {247--264},
  year = {2018},
  doi = {10.1145/3243734.3243765}
}""",
    # mechanisms
    "dwork2006calibrating": """@inproceedings{dwork2006calibrating,
  author = {Dwork, Cynthia and McSherry, Frank and Nissim, Kobbi and Smith, Adam},
  title = {Calibrating Noise to Sensitivity in Private Data Analysis},
  booktitle = {Theory of Cryptography (TCC 2006)},
  series = {Lecture Notes in Computer Science},
  volume = {3876},
  pages = {265--284},
  year = {2006},
  doi = {10.1007/11681878_14}
}""",
    "dwork2006our": """@inproceedings{dwork2006our,
  author = {Dwork, Cynthia and Kenthapadi, Krishnaram and McSherry, Frank and Mironov, Ilya and Naor, Moni},
  title = {Our Data, Ourselves: Privacy Via Distributed Noise Generation},
  booktitle = {Advances in Cryptology (EUROCRYPT 2006)},
  series = {Lecture Notes in Computer Science},
  volume = {4004},
  pages = {486--503},
  year = {2006},
  doi = {10.1007/11761679_29}
}""",
    "warner1965randomized": """@article{warner1965randomized,
  author = {Warner, Stanley L.},
  title = {Randomized Response: A Survey Technique for Eliminating Evasive Answer Bias},
  journal = {Journal of the American Statistical Association},
  volume = {60},
  number = {309},
  pages = {63--69},
  year = {1965},
  doi = {10.1080/01621459.1965.10480775}
}""",
    "mcsherry2007mechanism": """@inproceedings{mcsherry2007mechanism,
  author = {McSherry, Frank and Talwar, Kunal},
  title = {Mechanism Design via Differential Privacy},
  booktitle = {48th Annual IEEE Symposium on Foundations of Computer Science (FOCS)},
  pages = {94--103},
  year = {2007},
  doi = {10.1109/FOCS.2007.66}
}""",
    "lyu2017understanding": """@article{lyu2017understanding,
  author = {Lyu, Min and Su, Dong and Li, Ninghui},
  title = {Understanding the Sparse Vector Technique for Differential Privacy},
  journal = {Proceedings of the VLDB Endowment},
  volume = {10},
  number = {6},
  pages = {637--648},
  year = {2017},
  doi = {10.14778/3055330.3055331}
}""",
    # algorithm papers (seeds 000-004)
    "ding2020towards": """@inproceedings{ding2020towards,
  author = {Ding, J. and Wang, J. and Liang, G. and Bi, J. and Pan, M.},
  title = {Towards Plausible Differentially Private {ADMM} Based Distributed Machine Learning},
  booktitle = {Proceedings of the 29th ACM International Conference on Information and Knowledge Management (CIKM)},
  year = {2020}
}""",
    "wang2020privacy": """@article{wang2020privacy,
  author = {Wang, Xin and Ishii, Hideaki and Du, Linkang and Cheng, Peng and Chen, Jiming},
  title = {Privacy-preserving Distributed Machine Learning via Local Randomization and {ADMM} Perturbation},
  journal = {IEEE Transactions on Signal Processing},
  year = {2020},
  eprint = {1908.01059},
  archivePrefix = {arXiv}
}""",
    "cheng2020adaptive": """@inproceedings{cheng2020adaptive,
  author = {Cheng, Junhong and Liu, Wenyan and Wang, Xiaoling and Lu, Xingjian},
  title = {Adaptive Distributed Differential Privacy with {SGD}},
  booktitle = {Proceedings of the AAAI Conference on Artificial Intelligence},
  year = {2020}
}""",
    "zhang2016dual": """@inproceedings{zhang2016dual,
  author = {Zhang, Tao and Zhu, Quanyan},
  title = {A Dual Perturbation Approach for Differential Private {ADMM}-Based Distributed Empirical Risk Minimization},
  booktitle = {Proceedings of the 2016 ACM Workshop on Artificial Intelligence and Security (AISec)},
  year = {2016},
  doi = {10.1145/2996758.2996762}
}""",
    "huang2019dpadmm": """@article{huang2019dpadmm,
  author = {Huang, Zonghao and Hu, Rui and Guo, Yuanxiong and Chan-Tin, Eric and Gong, Yanmin},
  title = {{DP-ADMM}: {ADMM}-Based Distributed Learning With Differential Privacy},
  journal = {IEEE Transactions on Information Forensics and Security},
  volume = {14},
  number = {6},
  year = {2019},
  doi = {10.1109/TIFS.2019.2931068}
}""",
    # auditing
    "clopper1934use": """@article{clopper1934use,
  author = {Clopper, C. J. and Pearson, E. S.},
  title = {The Use of Confidence or Fiducial Limits Illustrated in the Case of the Binomial},
  journal = {Biometrika},
  volume = {26},
  number = {4},
  pages = {404--413},
  year = {1934},
  doi = {10.1093/biomet/26.4.404}
}""",
    "ding2018detecting": """@inproceedings{ding2018detecting,
  author = {Ding, Zeyu and Wang, Yuxin and Wang, Guanhong and Zhang, Danfeng and Kifer, Daniel},
  title = {Detecting Violations of Differential Privacy},
  booktitle = {Proceedings of the 2018 ACM SIGSAC Conference on Computer and Communications Security (CCS)},
  pages = {475--489},
  year = {2018},
  doi = {10.1145/3243734.3243818}
}""",
    "bichsel2021dpsniper": """@inproceedings{bichsel2021dpsniper,
  author = {Bichsel, Benjamin and Steffen, Samuel and Bogunovic, Ilija and Vechev, Martin},
  title = {{DP-Sniper}: Black-Box Discovery of Differential Privacy Violations using Classifiers},
  booktitle = {2021 IEEE Symposium on Security and Privacy (SP)},
  pages = {391--409},
  year = {2021},
  doi = {10.1109/SP40001.2021.00081}
}""",
    "jagielski2020auditing": """@inproceedings{jagielski2020auditing,
  author = {Jagielski, Matthew and Ullman, Jonathan and Oprea, Alina},
  title = {Auditing Differentially Private Machine Learning: How Private is Private {SGD}?},
  booktitle = {Advances in Neural Information Processing Systems 33 (NeurIPS)},
  year = {2020}
}""",
    "nasr2021adversary": """@inproceedings{nasr2021adversary,
  author = {Nasr, Milad and Song, Shuang and Thakurta, Abhradeep and Papernot, Nicolas and Carlini, Nicholas},
  title = {Adversary Instantiation: Lower Bounds for Differentially Private Machine Learning},
  booktitle = {2021 IEEE Symposium on Security and Privacy (SP)},
  pages = {866--882},
  year = {2021},
  doi = {10.1109/SP40001.2021.00069}
}""",
    "steinke2023privacy": """@inproceedings{steinke2023privacy,
  author = {Steinke, Thomas and Nasr, Milad and Jagielski, Matthew},
  title = {Privacy Auditing with One (1) Training Run},
  booktitle = {Advances in Neural Information Processing Systems 36 (NeurIPS)},
  year = {2023}
}""",
}

#: Citations recognised in ``method`` strings of accounting and audit results → entry keys.
METHOD_PATTERNS: tuple[tuple[str, str], ...] = (
    (r"Mironov,? Talwar", "mironov2019sampled"),
    (r"Mironov (\()?2017", "mironov2017renyi"),
    (r"\bRDP\b", "mironov2017renyi"),
    (r"Balle et al\.? 2020", "balle2020hypothesis"),
    (r"Canonne|CKS 2020", "canonne2020discrete"),
    (r"Bun (&|and) Steinke", "bun2016concentrated"),
    (r"Balle (&|and) Wang", "balle2018improving"),
    (r"Wang, Balle", "wang2019subsampled"),
    (r"Dwork, Rothblum|advanced composition", "dwork2010boosting"),
    (r"Kairouz", "kairouz2015composition"),
    (r"Dong, Roth|mu-GDP|μ-GDP", "dong2022gaussian"),
    (r"Koskela", "koskela2020computing"),
    (r"Doroshenko", "doroshenko2022connect"),
    (r"Meiser", "meiser2018tight"),
    (r"Clopper", "clopper1934use"),
    (r"Jagielski, Ullman", "jagielski2020auditing"),
    (r"Nasr et al|Nasr, Song", "nasr2021adversary"),
    (r"Steinke, Nasr|one run|one training run", "steinke2023privacy"),
    (r"DP-Sniper|Bichsel", "bichsel2021dpsniper"),
    (r"StatDP|Ding et al\.? 2018", "ding2018detecting"),
)

#: Event kinds (``PrivacyEvent.to_dict()["kind"]``) → the mechanism's paper.
MECHANISM_KEYS: dict[str, str] = {
    "gaussian": "dwork2006our",
    "discrete_gaussian": "canonne2020discrete",
    "laplace": "dwork2006calibrating",
    "discrete_laplace": "dwork2006calibrating",
    "randomized_response": "warner1965randomized",
    "exponential_mechanism": "mcsherry2007mechanism",
    "sparse_vector": "lyu2017understanding",
}

#: Algorithms of ``dpkit train`` → their seed paper.
ALGORITHM_KEYS: dict[str, str] = {
    "pp-admm": "ding2020towards",
    "ipp-admm": "ding2020towards",
    "admm": "ding2020towards",
    "hetero-admm": "wang2020privacy",
    "a-ddp": "cheng2020adaptive",
    "dvp-admm": "zhang2016dual",
    "dvp-pvp": "zhang2016dual",
    "dp-admm": "huang2019dpadmm",
    "admm-pvp": "huang2019dpadmm",
}

#: Accountant names (as in ``AccountingResult.accountant``) → the view's own paper, cited even
#: when the method string names only the conversion.
ACCOUNTANT_KEYS: dict[str, tuple[str, ...]] = {
    "rdp": ("mironov2017renyi",),
    "zcdp": ("bun2016concentrated",),
    "pld": ("koskela2020computing", "doroshenko2022connect"),
    "gdp": ("dong2022gaussian",),
    "gdp-exact": ("dong2022gaussian",),
    "analytic": ("balle2018improving",),
}

#: Audit input patterns → the paper that introduced them.
AUDIT_PAIRS_KEYS: dict[str, str] = {
    "statdp": "ding2018detecting",
    "statdp-one": "ding2018detecting",
    "statdp-monotone": "ding2018detecting",
}


#: Built-in mechanisms of ``dpkit audit --mechanism NAME`` → the mechanism's paper.
AUDIT_MECHANISM_KEYS: dict[str, str] = {
    "laplace": "dwork2006calibrating",
    "gaussian": "dwork2006our",
    "exponential": "mcsherry2007mechanism",
    "svt": "lyu2017understanding",
    "above-threshold": "lyu2017understanding",
}


def keys_in_method(method: str) -> set[str]:
    """Entry keys whose citation appears in a result's ``method`` string."""
    return {key for pattern, key in METHOD_PATTERNS if re.search(pattern, method or "")}


def event_kinds(event: Mapping) -> set[str]:
    """All ``kind`` values in a serialised event tree (``PrivacyEvent.to_dict()``)."""
    kinds: set[str] = set()
    stack = [event]
    while stack:
        node = stack.pop()
        if isinstance(node, Mapping):
            if "kind" in node:
                kinds.add(str(node["kind"]))
            stack.extend(node.values())
        elif isinstance(node, (list, tuple)):
            stack.extend(node)
    return kinds


def keys_for(
    *,
    accountings: Iterable[Mapping] = (),
    events: Iterable[Mapping] = (),
    algorithms: Iterable[str] = (),
    audits: Iterable[Mapping] = (),
) -> list[str]:
    """The sorted entry keys a report's numbers depend on.

    Parameters
    ----------
    accountings
        ``AccountingResult.to_dict()``-like mappings (``accountant`` and ``method``) of every
        privacy number the report shows.
    events
        Serialised privacy events that were accounted (their mechanisms and their subsampling).
    algorithms
        ``dpkit train`` algorithm names.
    audits
        Audit result mappings (``method``, ``pairs``, ``witness``, and ``mechanism_name``: the
        ``--mechanism`` option of ``dpkit audit``).

    Examples
    --------
    >>> keys_for(accountings=[{"accountant": "gdp", "method": "exact mu-GDP composition"}],
    ...          events=[{"kind": "gaussian", "sigma": 1.0, "sensitivity": 1.0}])
    ['dong2022gaussian', 'dwork2006our']
    """
    keys: set[str] = set()
    accountant_names = set()
    for result in accountings:
        name = str(result.get("accountant", ""))
        accountant_names.add(name)
        keys.update(ACCOUNTANT_KEYS.get(name, ()))
        keys |= keys_in_method(str(result.get("method", "")))
    kinds: set[str] = set()
    for event in events:
        kinds |= event_kinds(event)
    keys.update(MECHANISM_KEYS[kind] for kind in kinds if kind in MECHANISM_KEYS)
    if "rdp" in accountant_names:
        if "poisson_sampled" in kinds:
            keys.add("mironov2019sampled")
        if "sampled_without_replacement" in kinds:
            keys.add("wang2019subsampled")
    keys.update(ALGORITHM_KEYS[name] for name in algorithms if name in ALGORITHM_KEYS)
    for audit in audits:
        keys |= keys_in_method(str(audit.get("method", "")))
        if audit.get("mechanism_name") in AUDIT_MECHANISM_KEYS:
            keys.add(AUDIT_MECHANISM_KEYS[audit["mechanism_name"]])
        pairs = audit.get("pairs")
        if pairs in AUDIT_PAIRS_KEYS:
            keys.add(AUDIT_PAIRS_KEYS[pairs])
        witness_event = (audit.get("witness") or {}).get("event") or {}
        if "learned" in str(witness_event.get("feature", "")) or "classifier" in str(witness_event.get("family", "")):
            keys.add("bichsel2021dpsniper")
    unknown = keys - ENTRIES.keys()
    if unknown:  # a pattern or table pointing nowhere is a bug in this module
        raise KeyError(f"bibliography keys without an entry: {sorted(unknown)}")
    return sorted(keys)


def render_bibtex(keys: Iterable[str]) -> str:
    """The BibTeX file text of ``keys`` (in the given order, each once)."""
    seen: list[str] = []
    for key in keys:
        if key not in ENTRIES:
            raise ValueError(f"unknown bibliography key {key!r}; known keys: {sorted(ENTRIES)}")
        if key not in seen:
            seen.append(key)
    return "\n\n".join(ENTRIES[key] for key in seen) + ("\n" if seen else "")
