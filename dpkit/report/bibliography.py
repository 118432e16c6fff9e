"""BibTeX entries of the methods behind dpkit's numbers, and the selection for one report.

A report cites *exactly* the methods its numbers depend on: the mechanisms that spent the
budget, the accountants, conversions and subsampling bounds that turned events into (ε, δ)
(the ``references`` every :class:`~dpkit.accounting.base.AccountingResult` carries), the
algorithm's papers (:data:`ALGORITHM_KEYS`, by registry name), the data set
(:data:`DATASET_KEYS`, by the name in a train document's ``config["data"]``), and the audit's
statistics (the ``references`` of its result). Keys come from these structured fields and
tables only, never from free text. :func:`keys_for` makes that selection; :func:`render_bibtex`
writes the entries.

Only entries whose metadata were checked are listed; missing page numbers are left out rather
than guessed.
"""

from __future__ import annotations

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
    "dwork2014algorithmic": """@article{dwork2014algorithmic,
  author = {Dwork, Cynthia and Roth, Aaron},
  title = {The Algorithmic Foundations of Differential Privacy},
  journal = {Foundations and Trends in Theoretical Computer Science},
  volume = {9},
  number = {3--4},
  pages = {211--407},
  year = {2014},
  doi = {10.1561/0400000042}
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
    # algorithm papers (seeds 000-004) and the centralised baseline
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
    "song2013stochastic": """@inproceedings{song2013stochastic,
  author = {Song, Shuang and Chaudhuri, Kamalika and Sarwate, Anand D.},
  title = {Stochastic Gradient Descent with Differentially Private Updates},
  booktitle = {2013 IEEE Global Conference on Signal and Information Processing (GlobalSIP)},
  pages = {245--248},
  year = {2013},
  doi = {10.1109/GlobalSIP.2013.6736861}
}""",
    "bassily2014private": """@inproceedings{bassily2014private,
  author = {Bassily, Raef and Smith, Adam and Thakurta, Abhradeep},
  title = {Private Empirical Risk Minimization: Efficient Algorithms and Tight Error Bounds},
  booktitle = {2014 IEEE 55th Annual Symposium on Foundations of Computer Science (FOCS)},
  pages = {464--473},
  year = {2014},
  doi = {10.1109/FOCS.2014.56}
}""",
    # data sets
    "becker1996adult": """@misc{becker1996adult,
  author       = {Becker, Barry and Kohavi, Ronny},
  title        = {Adult},
  year         = {1996},
  howpublished = {UCI Machine Learning Repository},
  doi          = {10.24432/C5XW20},
  note         = {CC BY 4.0}
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
    "nasr2023tight": """@inproceedings{nasr2023tight,
  author = {Nasr, Milad and Hayes, Jamie and Steinke, Thomas and Balle, Borja and Tram{\\`e}r, Florian and Jagielski, Matthew and Carlini, Nicholas and Terzis, Andreas},
  title = {Tight Auditing of Differentially Private Machine Learning},
  booktitle = {32nd USENIX Security Symposium (USENIX Security 23)},
  year = {2023},
  eprint = {2302.07956},
  archivePrefix = {arXiv}
}""",
    "steinke2023privacy": """@inproceedings{steinke2023privacy,
  author = {Steinke, Thomas and Nasr, Milad and Jagielski, Matthew},
  title = {Privacy Auditing with One (1) Training Run},
  booktitle = {Advances in Neural Information Processing Systems 36 (NeurIPS)},
  year = {2023}
}""",
    "zhu2020improving": """@inproceedings{zhu2020improving,
  author = {Zhu, Yuqing and Wang, Yu-Xiang},
  title = {Improving Sparse Vector Technique with {R}{\\'e}nyi Differential Privacy},
  booktitle = {Advances in Neural Information Processing Systems 33 (NeurIPS)},
  year = {2020}
}""",
    "balle2018privacy": """@inproceedings{balle2018privacy,
  author = {Balle, Borja and Barthe, Gilles and Gaboardi, Marco},
  title = {Privacy Amplification by Subsampling: Tight Analyses via Couplings and Divergences},
  booktitle = {Advances in Neural Information Processing Systems 31 (NeurIPS)},
  year = {2018}
}""",
    "zhu2022optimal": """@inproceedings{zhu2022optimal,
  author = {Zhu, Yuqing and Dong, Jinshuo and Wang, Yu-Xiang},
  title = {Optimal Accounting of Differential Privacy via Characteristic Function},
  booktitle = {Proceedings of the 25th International Conference on Artificial Intelligence and Statistics (AISTATS)},
  series = {Proceedings of Machine Learning Research},
  volume = {151},
  year = {2022}
}""",
    "whitehouse2023fully": """@inproceedings{whitehouse2023fully,
  author = {Whitehouse, Justin and Ramdas, Aaditya and Rogers, Ryan and Wu, Zhiwei Steven},
  title = {Fully-Adaptive Composition in Differential Privacy},
  booktitle = {Proceedings of the 40th International Conference on Machine Learning (ICML)},
  series = {Proceedings of Machine Learning Research},
  volume = {202},
  year = {2023}
}""",
    "mironov2012significance": """@inproceedings{mironov2012significance,
  author = {Mironov, Ilya},
  title = {On Significance of the Least Significant Bits for Differential Privacy},
  booktitle = {Proceedings of the 2012 ACM Conference on Computer and Communications Security (CCS)},
  year = {2012}
}""",
    "kairouz2021practical": """@inproceedings{kairouz2021practical,
  author = {Kairouz, Peter and McMahan, Brendan and Song, Shuang and Thakkar, Om and Thakurta, Abhradeep and Xu, Zheng},
  title = {Practical and Private (Deep) Learning Without Sampling or Shuffling},
  booktitle = {Proceedings of the 38th International Conference on Machine Learning (ICML)},
  series = {Proceedings of Machine Learning Research},
  volume = {139},
  year = {2021}
}""",
    "papernot2022hyperparameter": """@inproceedings{papernot2022hyperparameter,
  author = {Papernot, Nicolas and Steinke, Thomas},
  title = {Hyperparameter Tuning with {R}{\\'e}nyi Differential Privacy},
  booktitle = {International Conference on Learning Representations (ICLR)},
  year = {2022}
}""",
    "cesar2021bounding": """@inproceedings{cesar2021bounding,
  author = {Cesar, Mark and Rogers, Ryan},
  title = {Bounding, Concentrating, and Truncating: Unifying Privacy Loss Composition for Data Analytics},
  booktitle = {Proceedings of the 32nd International Conference on Algorithmic Learning Theory (ALT)},
  series = {Proceedings of Machine Learning Research},
  volume = {132},
  year = {2021}
}""",
    "dong2020optimal": """@inproceedings{dong2020optimal,
  author = {Dong, Jinshuo and Durfee, David and Rogers, Ryan},
  title = {Optimal Differential Privacy Composition for Exponential Mechanisms},
  booktitle = {Proceedings of the 37th International Conference on Machine Learning (ICML)},
  series = {Proceedings of Machine Learning Research},
  volume = {119},
  year = {2020}
}""",
    "feldman2021hiding": """@inproceedings{feldman2021hiding,
  author = {Feldman, Vitaly and McMillan, Audra and Talwar, Kunal},
  title = {Hiding Among the Clones: A Simple and Nearly Optimal Analysis of Privacy Amplification by Shuffling},
  booktitle = {2021 IEEE 62nd Annual Symposium on Foundations of Computer Science (FOCS)},
  year = {2021}
}""",
}

#: Event kinds (``PrivacyEvent.to_dict()["kind"]``) → the mechanism's paper.
MECHANISM_KEYS: dict[str, str] = {
    "gaussian": "dwork2006our",
    "discrete_gaussian": "canonne2020discrete",
    "laplace": "dwork2006calibrating",
    "discrete_laplace": "dwork2006calibrating",
    "randomized_response": "warner1965randomized",
    "exponential_mechanism": "mcsherry2007mechanism",
    "sparse_vector": "lyu2017understanding",
    "gaussian_sparse_vector": "zhu2020improving",
    "tree_aggregation": "kairouz2021practical",
    "repeat_and_select": "papernot2022hyperparameter",
    "shuffled": "feldman2021hiding",
}

#: Algorithms of ``dpkit train`` (registry names) → the papers the algorithm implements.
ALGORITHM_KEYS: dict[str, tuple[str, ...]] = {
    "admm": ("ding2020towards",),  # the non-private reference: Ding et al. 2020, eqs. 3-4
    "dp-logreg": ("song2013stochastic", "bassily2014private", "dong2022gaussian"),  # noisy GD, GDP calibration
    "pp-admm": ("ding2020towards",),
    "ipp-admm": ("ding2020towards",),
    "dp-admm": ("huang2019dpadmm",),
    "admm-pvp": ("huang2019dpadmm",),  # Huang et al. 2019, Algorithm 2
    "hetero-admm": ("wang2020privacy",),
    "a-ddp": ("cheng2020adaptive",),
    "dvp-admm": ("zhang2016dual",),
}

#: Data sets of ``dpkit train`` (``config["data"]`` of a train document) → their citation, by name prefix.
DATASET_KEYS: dict[str, tuple[str, ...]] = {
    "adult": ("becker1996adult",),
}


def dataset_keys(name: str | None) -> tuple[str, ...]:
    """The citation of the data set a train document names (``config["data"]``, e.g. ``"adult[104]"``).

    >>> dataset_keys("adult[104]"), dataset_keys("synthetic(n=4000, d=20)"), dataset_keys(None)
    (('becker1996adult',), (), ())
    """
    if not isinstance(name, str):
        return ()
    keys: list[str] = []
    for prefix, cited in DATASET_KEYS.items():
        if name.lower().startswith(prefix):
            keys.extend(cited)
    return tuple(keys)


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
    datasets: Iterable[str | None] = (),
) -> list[str]:
    """The sorted entry keys a report's numbers depend on.

    Parameters
    ----------
    accountings
        ``AccountingResult.to_dict()``-like mappings of every privacy number the report shows;
        their ``references`` are cited.
    events
        Serialised privacy events that were accounted (their mechanisms and their subsampling).
    algorithms
        ``dpkit train`` algorithm names.
    audits
        Audit result mappings (``references``, ``pairs``, and ``mechanism_name``: the
        ``--mechanism`` option of ``dpkit audit``).
    datasets
        Data set names of ``dpkit train`` documents (``config["data"]``).

    Examples
    --------
    >>> keys_for(accountings=[{"accountant": "gdp", "references": ["dong2022gaussian"]}],
    ...          events=[{"kind": "gaussian", "sigma": 1.0, "sensitivity": 1.0}])
    ['dong2022gaussian', 'dwork2006our']
    """
    cited = [key for result in accountings for key in (result.get("references") or ())]
    cited += [key for audit in audits for key in (audit.get("references") or ())]
    strange = [key for key in cited if not isinstance(key, str) or key not in ENTRIES]
    if strange:  # the "references" of a document's results: data, checked like data
        raise ValueError(f"a document cites {strange[0]!r}, which is not a key of dpkit's bibliography")
    keys: set[str] = set(cited)
    kinds: set[str] = set()
    for event in events:
        kinds |= event_kinds(event)
    keys.update(MECHANISM_KEYS[kind] for kind in kinds if kind in MECHANISM_KEYS)
    for name in algorithms:
        keys.update(ALGORITHM_KEYS.get(name, ()))
    for name in datasets:
        keys.update(dataset_keys(name))
    for audit in audits:
        if audit.get("mechanism_name") in AUDIT_MECHANISM_KEYS:
            keys.add(AUDIT_MECHANISM_KEYS[audit["mechanism_name"]])
        if audit.get("pairs") in AUDIT_PAIRS_KEYS:
            keys.add(AUDIT_PAIRS_KEYS[audit["pairs"]])
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
